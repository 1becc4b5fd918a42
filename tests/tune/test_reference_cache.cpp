// The reference cache's files: a round trip gives the bytes back; a file is used only when all of its
// header and its size and checksum match (a short, appended, foreign, corrupted or other-version file
// is a miss that says why, and leaves the output untouched); keys do not collide; concurrent writers
// never expose a partial file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>
#include <vector>

#include "moekit/tuning.h"
#include "tune/reference_cache.h"

namespace moekit::tune {
namespace {

namespace fs = std::filesystem;

class ReferenceCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moekit_refcache_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    key_ = reference_key(MoeProblem{.num_experts = 4, .top_k = 2, .hidden = 32, .intermediate = 16}, {.num_tokens = 6, .seed = 3});
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A bf16 [3, 5] tensor with bytes that depend on `salt`.
  static Tensor pattern(int salt, std::vector<int64_t> shape = {3, 5}, DType dtype = DType::kBF16) {
    auto t = Tensor::empty(dtype, std::span<const int64_t>(shape));
    EXPECT_TRUE(t.ok());
    auto* p = t->data_as<unsigned char>();
    for (int64_t i = 0; i < t->storage_bytes(); ++i) p[i] = static_cast<unsigned char>(i * 7 + salt);
    return std::move(t).value();
  }
  static bool same_bytes(const TensorView& a, const TensorView& b) {
    return a.storage_bytes() == b.storage_bytes() && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.storage_bytes())) == 0;
  }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (fs::exists(dir_))
      for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    return out;
  }

  fs::path dir_;
  ReferenceKey key_;
};

TEST_F(ReferenceCacheTest, KeyNamesEveryInputAndHashesIntoTheFileName) {
  const MoeProblem p{.num_experts = 4, .top_k = 2, .hidden = 32, .intermediate = 16};
  EXPECT_EQ(key_.to_string(), "moekit-reference v1|" + problem_key(p) + "|T=6|seed=3|biases=0");
  EXPECT_TRUE(std::regex_match(key_.file_name(), std::regex("[0-9a-f]{16}\\.bin"))) << key_.file_name();
  EXPECT_EQ(reference_key(p, {.num_tokens = 6, .seed = 3}).file_name(), key_.file_name());
  // Whether the layer has inputs or weights only, or where its weights are, does not change it.
  EXPECT_EQ(reference_key(p, {.num_tokens = 6, .seed = 3, .weights_only = true}).file_name(), key_.file_name());
  std::vector<ReferenceKey> others = {
      reference_key(MoeProblem{.num_experts = 4, .top_k = 2, .hidden = 32, .intermediate = 24}, {.num_tokens = 6, .seed = 3}),
      reference_key(p, {.num_tokens = 7, .seed = 3}), reference_key(p, {.num_tokens = 6, .seed = 4}),
      reference_key(p, {.num_tokens = 6, .seed = 3, .biases = true})};
  for (const auto& o : others) {
    EXPECT_NE(o.to_string(), key_.to_string());
    EXPECT_NE(o.file_name(), key_.file_name()) << o.to_string();
  }
}

TEST_F(ReferenceCacheTest, RoundTripGivesTheBytesBack) {
  ReferenceCache cache(dir_.string());
  Tensor ref = pattern(1);
  Tensor out = pattern(99);
  auto miss = cache.load(key_, out);
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss->hit);
  EXPECT_EQ(miss->why, "no file");
  EXPECT_FALSE(cache.has(key_));

  auto path = cache.store(key_, ref);
  ASSERT_TRUE(path.ok()) << path.status().to_string();
  EXPECT_EQ(*path, cache.path_of(key_));
  EXPECT_EQ(files(), std::vector<std::string>{key_.file_name()});  // no temporary file left
  EXPECT_TRUE(cache.has(key_));
  auto hit = cache.load(key_, out);
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(hit->hit) << hit->why;
  EXPECT_EQ(hit->path, *path);
  EXPECT_TRUE(same_bytes(out, ref));
}

TEST_F(ReferenceCacheTest, AnythingThatDoesNotMatchIsAMissThatSaysWhyAndTouchesNothing) {
  ReferenceCache cache(dir_.string());
  Tensor ref = pattern(1);
  ASSERT_TRUE(cache.store(key_, ref).ok());
  const std::string path = cache.path_of(key_);
  std::string good;
  {
    std::ifstream in(path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  };
  // Each damaged file, and what the miss must say.
  std::string flipped = good, other_version = good;
  flipped.back() = static_cast<char>(flipped.back() ^ 1);
  other_version[8] = 2;  // the version field follows the 8-byte magic
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {good.substr(0, good.size() - 1), "cut short or appended to"},
      {good + "x", "cut short or appended to"},
      {good.substr(0, 20), "shorter than a header"},
      {flipped, "checksum"},
      {other_version, "version 2 (this build reads 1)"},
      {std::string(200, 'z'), "magic"},
  };
  for (const auto& [bytes, why] : damaged) {
    write(bytes);
    Tensor out = pattern(99);
    auto r = cache.load(key_, out);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->hit) << why;
    EXPECT_NE(r->why.find(why), std::string::npos) << r->why;
    EXPECT_TRUE(same_bytes(out, pattern(99))) << "a miss wrote into the output (" << why << ")";
    if (why == "checksum") EXPECT_TRUE(cache.has(key_));  // has() reads no payload: the worker's load decides
    else EXPECT_FALSE(cache.has(key_)) << why;
  }
  // Rewritten, it is used again.
  ASSERT_TRUE(cache.store(key_, ref).ok());
  Tensor out = pattern(99);
  EXPECT_TRUE(cache.load(key_, out)->hit);
  EXPECT_TRUE(same_bytes(out, ref));

  // What the caller expects must match too: dtype, shape, byte count.
  Tensor f16 = pattern(99, {3, 5}, DType::kF16);
  EXPECT_NE(cache.load(key_, f16)->why.find("dtype bf16 (want f16)"), std::string::npos);
  Tensor other_shape = pattern(99, {5, 3});
  EXPECT_NE(cache.load(key_, other_shape)->why.find("shape [3, 5] (want [5, 3])"), std::string::npos);

  // Another key's file at this key's name (as a hash collision would put it) is not this reference.
  ReferenceKey other = key_;
  other.seed = 4;
  ASSERT_TRUE(cache.store(other, pattern(2)).ok());
  fs::copy_file(cache.path_of(other), path, fs::copy_options::overwrite_existing);
  auto foreign = cache.load(key_, out);
  EXPECT_FALSE(foreign->hit);
  EXPECT_NE(foreign->why.find("written for another key: '" + other.to_string() + "'"), std::string::npos) << foreign->why;
  EXPECT_FALSE(cache.has(key_));
}

TEST_F(ReferenceCacheTest, TwoKeysKeepTheirOwnFiles) {
  ReferenceCache cache(dir_.string());
  ReferenceKey other = key_;
  other.tokens = 7;
  ASSERT_TRUE(cache.store(key_, pattern(1)).ok());
  ASSERT_TRUE(cache.store(other, pattern(2)).ok());
  EXPECT_EQ(files().size(), 2u);
  Tensor a = pattern(99), b = pattern(99);
  EXPECT_TRUE(cache.load(key_, a)->hit);
  EXPECT_TRUE(cache.load(other, b)->hit);
  EXPECT_TRUE(same_bytes(a, pattern(1)));
  EXPECT_TRUE(same_bytes(b, pattern(2)));
}

TEST_F(ReferenceCacheTest, ConcurrentWritersNeverExposeAPartialFile) {
  // Writers store the same key over and over (as one worker per GPU would) while a reader loads it:
  // every load finds no file yet, or the whole reference; never a short one.
  ReferenceCache cache(dir_.string());
  Tensor ref = pattern(5, {64, 1024});  // 128 KiB: a write takes long enough to be caught halfway
  std::atomic<bool> done{false};
  std::atomic<int> hits{0}, bad{0};
  std::string bad_why;
  std::thread reader([&] {
    Tensor out = pattern(99, {64, 1024});
    while (!done) {
      auto r = cache.load(key_, out);
      if (r.ok() && r->hit && same_bytes(out, ref)) {
        ++hits;
      } else if (!r.ok() || r->why != "no file") {
        if (bad++ == 0) bad_why = r.ok() ? r->why : r.status().to_string();
      }
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w)
    writers.emplace_back([&] {
      for (int i = 0; i < 40; ++i) EXPECT_TRUE(cache.store(key_, ref).ok());
    });
  for (auto& t : writers) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0) << bad_why;
  Tensor out = pattern(99, {64, 1024});
  EXPECT_TRUE(cache.load(key_, out)->hit);
  EXPECT_EQ(files(), std::vector<std::string>{key_.file_name()});  // every temporary file was renamed
}

TEST_F(ReferenceCacheTest, OnlyHostTensorsAndAWritableDirectory) {
  std::vector<uint16_t> storage(15);
  const TensorView on_gpu(storage.data(), DType::kBF16, {3, 5}, Device::cuda());  // a view only: never read
  ReferenceCache cache(dir_.string());
  EXPECT_NE(cache.load(key_, on_gpu).status().message().find("must be a contiguous host tensor"), std::string::npos);
  EXPECT_NE(cache.store(key_, on_gpu).status().message().find("must be a contiguous host tensor"), std::string::npos);
  // A directory under a regular file cannot be created: an error naming it, not a crash.
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  ReferenceCache under_file((dir_ / "file" / "refs").string());
  auto r = under_file.store(key_, pattern(1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot create directory " + (dir_ / "file" / "refs").string()), std::string::npos) << r.status().to_string();
}

}  // namespace
}  // namespace moekit::tune
