// The worker and its reference cache, in this process on the CPU backend: the first run computes the
// reference and stores the bytes cpu::run_reference gives; the next reads them and does not run the
// reference (a wrong cached reference then fails validation, which a computed one would not); a
// damaged file is recomputed and rewritten; another seed has its own file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "moekit/cpu_reference.h"
#include "moekit/random_layer.h"
#include "tune/output_check.h"
#include "tune/reference_cache.h"
#include "tune/worker.h"

namespace moekit::tune {
namespace {

namespace fs = std::filesystem;

class WorkerReference : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moekit_worker_ref_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    rq_ = WorkerRequest{.problem = MoeProblem{.num_experts = 4, .top_k = 2, .hidden = 32, .intermediate = 16},
                        .tokens = 5, .backend = BackendChoice::kCpu, .seed = 3, .warmup = 0, .iters = 1, .per_step = false,
                        .reference_cache = (dir_ / "refs").string()};
  }
  void TearDown() override { fs::remove_all(dir_); }

  WorkerResult run() {
    auto r = run_candidate(rq_);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : WorkerResult{};
  }
  ReferenceKey key() const { return reference_key(rq_.problem, worker_layer_options(rq_.tokens, rq_.seed)); }

  // The reference as the worker computes it without a cache: the whole layer, NaN-poisoned output.
  Tensor reference() const {
    auto layer = make_random_layer(rq_.problem, worker_layer_options(rq_.tokens, rq_.seed));
    EXPECT_TRUE(layer.ok());
    auto ref = Tensor::empty(layer->out.dtype(), layer->out.shape());
    poison_nan(ref->view());
    MoeOutputs out;
    out.out = ref->view();
    EXPECT_TRUE(cpu::run_reference(rq_.problem, layer->weights, layer->inputs(), out).ok());
    return std::move(ref).value();
  }
  // The cached reference for `k`, or an empty tensor on a miss.
  Tensor cached(const ReferenceKey& k) const {
    Tensor ref = reference();  // the right dtype and shape; overwritten on a hit
    auto r = ReferenceCache(rq_.reference_cache).load(k, ref);
    EXPECT_TRUE(r.ok());
    return r.ok() && r->hit ? std::move(ref) : Tensor{};
  }
  static bool same_bytes(const TensorView& a, const TensorView& b) {
    return a.data() != nullptr && b.data() != nullptr && a.storage_bytes() == b.storage_bytes() &&
           std::memcmp(a.data(), b.data(), static_cast<size_t>(a.storage_bytes())) == 0;
  }

  fs::path dir_;
  WorkerRequest rq_;
};

TEST_F(WorkerReference, TheFirstRunStoresTheReferenceTheNextReadsIt) {
  const WorkerResult first = run();
  EXPECT_TRUE(first.ok) << first.failure;
  EXPECT_EQ(first.reference, "computed");
  EXPECT_EQ(first.weights, "host");
  const std::string path = ReferenceCache(rq_.reference_cache).path_of(key());
  EXPECT_EQ(first.reference_note, path + ": no file; stored");
  EXPECT_TRUE(same_bytes(cached(key()), reference()));  // the stored bytes are the reference's

  const WorkerResult second = run();
  EXPECT_TRUE(second.ok) << second.failure;
  EXPECT_EQ(second.reference, "cache");
  EXPECT_EQ(second.reference_note, path);
  EXPECT_EQ(second.weights, "host");  // the CPU backend reads host weights
  EXPECT_EQ(second.error, 0);         // the CPU backend is bitwise the reference
  EXPECT_EQ(second.metric, first.metric);

  // The round trip through the JSON line the tuner reads keeps where the reference came from.
  auto parsed = parse_worker_json(to_json_line(second));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->reference, "cache");
  EXPECT_EQ(parsed->reference_note, path);
  EXPECT_EQ(parsed->weights, "host");
}

TEST_F(WorkerReference, ACachedReferenceIsTrustedAndTheReferenceDoesNotRun) {
  // A file with a valid header but other values: were the reference computed, the candidate would
  // pass; read from the cache, it fails validation.
  Tensor wrong = reference();
  std::memset(wrong.data(), 0, static_cast<size_t>(wrong.storage_bytes()));
  ASSERT_TRUE(ReferenceCache(rq_.reference_cache).store(key(), wrong).ok());
  const WorkerResult r = run();
  EXPECT_EQ(r.reference, "cache");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.failure.starts_with("validation: ")) << r.failure;
}

TEST_F(WorkerReference, ADamagedFileIsRecomputedAndRewritten) {
  ASSERT_TRUE(run().ok);
  const std::string path = ReferenceCache(rq_.reference_cache).path_of(key());
  fs::resize_file(path, fs::file_size(path) - 3);  // as a worker killed while writing in place would leave it
  const WorkerResult r = run();
  EXPECT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.reference, "computed");
  EXPECT_NE(r.reference_note.find("(cut short or appended to); stored"), std::string::npos) << r.reference_note;
  EXPECT_TRUE(same_bytes(cached(key()), reference()));
  EXPECT_EQ(run().reference, "cache");
}

TEST_F(WorkerReference, AnotherSeedHasItsOwnFile) {
  ASSERT_EQ(run().reference, "computed");
  const ReferenceKey seed3 = key();
  const Tensor ref3 = reference();
  rq_.seed = 4;
  const WorkerResult other = run();
  EXPECT_TRUE(other.ok) << other.failure;
  EXPECT_EQ(other.reference, "computed");
  const ReferenceKey seed4 = key();
  EXPECT_NE(seed3.file_name(), seed4.file_name());
  EXPECT_TRUE(same_bytes(cached(seed4), reference()));
  EXPECT_TRUE(same_bytes(cached(seed3), ref3));  // not overwritten by seed 4
  EXPECT_FALSE(same_bytes(ref3, reference()));   // and the two references differ
}

TEST_F(WorkerReference, WithoutACacheTheReferenceIsComputedEveryTime) {
  rq_.reference_cache.clear();
  const WorkerResult r = run();
  EXPECT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.reference, "computed");
  EXPECT_EQ(r.reference_note, "");
  EXPECT_FALSE(fs::exists(dir_ / "refs"));
}

}  // namespace
}  // namespace moekit::tune
