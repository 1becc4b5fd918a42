// The safetensors reader, writer and sharded index: round trips, byte-exact agreement with the format's
// reference writer, files written by hand, and one test per header validation rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "io/io_test_util.h"
#include "moekit/safetensors.h"

namespace moekit {
namespace {

using testing::TempDir;

bool points_into(const TensorView& v, std::span<const std::byte> mapping) {
  const auto* p = static_cast<const std::byte*>(v.data());
  return p >= mapping.data() && p + v.storage_bytes() <= mapping.data() + mapping.size();
}

// ---- Round trips -----------------------------------------------------------------------------------

TEST(Safetensors, RoundTripEveryExpressibleDtype) {
  TempDir dir;
  std::vector<Tensor> owned;
  std::vector<NamedTensor> named;
  auto add = [&](std::string name, DType dtype, std::vector<int64_t> shape) {
    owned.push_back(testing::make_tensor(dtype, std::move(shape)));
    testing::fill_bytes(owned.back(), static_cast<uint32_t>(owned.size()));
    named.push_back({std::move(name), owned.back().view()});
  };
  add("model.f64", DType::kF64, {3});
  add("model.f32", DType::kF32, {2, 3});
  add("model.f16", DType::kF16, {5});
  add("model.bf16", DType::kBF16, {4, 1, 2});
  add("fp8.e4m3", DType::kE4M3, {3, 5});
  add("fp8.e5m2", DType::kE5M2, {7});
  add("mx.e8m0", DType::kE8M0, {3});
  add("mx.e2m1", DType::kE2M1, {2, 4});
  add("ints.i64", DType::kI64, {});
  add("ints.i32", DType::kI32, {2});
  add("ints.i8", DType::kI8, {9});
  add("bytes.u8", DType::kU8, {0, 4});
  const std::map<std::string, std::string> metadata{{"format", "pt"}, {"written_by", "moekit test"}};
  const auto path = dir / "all.safetensors";
  ASSERT_TRUE(write_safetensors(path, named, metadata).ok());

  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->metadata(), metadata);
  EXPECT_EQ(file->tensors().size(), named.size());
  for (const auto& n : named) {
    SCOPED_TRACE(n.name);
    const SafetensorsTensorInfo* info = file->find(n.name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->dtype_name, *safetensors_dtype_name(n.tensor.dtype()));
    EXPECT_EQ(info->dtype, n.tensor.dtype());
    EXPECT_EQ(info->shape, testing::shape_of(n.tensor));
    auto view = file->view(n.name);
    ASSERT_TRUE(view.ok()) << view.status().to_string();
    EXPECT_EQ(view->dtype(), n.tensor.dtype());
    EXPECT_EQ(testing::shape_of(*view), testing::shape_of(n.tensor));
    EXPECT_TRUE(testing::same_bytes(*view, n.tensor));
    EXPECT_TRUE(points_into(*view, file->mapping())) << "the view must point into the mapped file";
    // Larger elements come first and the header is padded to 8 bytes: every tensor is aligned.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(view->data()) % static_cast<uintptr_t>(std::max(1, dtype_bits(n.tensor.dtype()) / 8)), 0u);
  }
  // Offsets tile the data section in order of decreasing element size.
  for (size_t i = 1; i < file->tensors().size(); ++i) {
    EXPECT_EQ(file->tensors()[i].data_begin, file->tensors()[i - 1].data_end);
    EXPECT_LE(dtype_bits(*file->tensors()[i].dtype), dtype_bits(*file->tensors()[i - 1].dtype));
  }
}

// The serializations of huggingface/safetensors' own tests (tensor.rs: test_serialization, test_empty).
TEST(Safetensors, WriterMatchesTheReferenceWriterByteForByte) {
  TempDir dir;
  Tensor t = testing::make_tensor(DType::kF32, {1, 2, 3});
  testing::fill_values(t, [](int64_t i) { return static_cast<double>(i); });
  const NamedTensor one{"attn.0", t.view()};
  ASSERT_TRUE(write_safetensors(dir / "a.safetensors", std::span<const NamedTensor>(&one, 1)).ok());
  std::string data;
  for (float f : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f}) data.append(reinterpret_cast<const char*>(&f), 4);
  EXPECT_EQ(testing::read_file(dir / "a.safetensors"),
            testing::le64(64) + R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})" + data);

  ASSERT_TRUE(write_safetensors(dir / "empty.safetensors", {}).ok());
  EXPECT_EQ(testing::read_file(dir / "empty.safetensors"), testing::le64(8) + "{}      ");
  ASSERT_TRUE(write_safetensors(dir / "meta.safetensors", {}, {{"framework", "pt"}}).ok());
  EXPECT_EQ(testing::read_file(dir / "meta.safetensors"), testing::le64(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
}

// A file written by hand: entries out of data order, metadata last, spaces around the JSON.
TEST(Safetensors, ReadsAHandWrittenFile) {
  TempDir dir;
  const std::string header =
      R"( { "b": {"shape": [2], "dtype": "BF16", "data_offsets": [4, 8]},)"
      R"( "a": {"dtype": "I32", "shape": [], "data_offsets": [0, 4]}, "__metadata__": {"k": "v"} }   )";
  const std::string data = std::string("\x07\x00\x00\x00", 4) + std::string("\x80\x3f\x00\x40", 4);  // 7; bf16 1.0, 2.0
  testing::write_file(dir / "h.safetensors", testing::safetensors_bytes(header, data));
  auto file = SafetensorsFile::open(dir / "h.safetensors");
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  ASSERT_EQ(file->tensors().size(), 2u);
  EXPECT_EQ(file->tensors()[0].name, "a");  // data-offset order
  EXPECT_EQ(file->metadata().at("k"), "v");
  auto a = file->view("a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->ndim(), 0);
  EXPECT_EQ(*a->data_as<const int32_t>(), 7);
  auto b = file->view("b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(load_element(b->data(), DType::kBF16, 0), 1.0);
  EXPECT_EQ(load_element(b->data(), DType::kBF16, 1), 2.0);
  MOEKIT_EXPECT_ERROR(file->view("c").status(), StatusCode::kNotFound, "h.safetensors", "'c'");
}

TEST(Safetensors, DtypesWithoutAMoekitDtypeOpenButHaveNoView) {
  TempDir dir;
  const std::string header = R"({"flags":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]},)"
                             R"("ids":{"dtype":"U16","shape":[2],"data_offsets":[3,7]}})";
  testing::write_file(dir / "u.safetensors", testing::safetensors_bytes(header, std::string("\x01\x00\x01\x05\x00\x06\x00", 7)));
  auto file = SafetensorsFile::open(dir / "u.safetensors");
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_FALSE(file->find("ids")->dtype.has_value());
  EXPECT_EQ(file->find("ids")->dtype_name, "U16");
  MOEKIT_EXPECT_ERROR(file->view("ids").status(), StatusCode::kUnsupported, "'ids'", "U16");
  auto bytes = file->bytes("flags");
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size(), 3u);
  EXPECT_EQ(static_cast<int>((*bytes)[2]), 1);
}

// Safetensors F4 counts fp4 elements; moekit's packed views also need an even innermost extent.
TEST(Safetensors, PackedFp4NeedsAnEvenInnermostExtentForAView) {
  TempDir dir;
  const std::string header = R"({"w":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]}})";
  testing::write_file(dir / "f4.safetensors", testing::safetensors_bytes(header, "abc"));
  auto file = SafetensorsFile::open(dir / "f4.safetensors");
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  MOEKIT_EXPECT_ERROR(file->view("w").status(), StatusCode::kInvalidArgument, "'w'", "even");
}

TEST(Safetensors, DtypeNamesMapBothWays) {
  for (DType t : all_dtypes()) {
    const auto name = safetensors_dtype_name(t);
    if (t == DType::kI4 || t == DType::kUE4M3) {
      EXPECT_FALSE(name.has_value()) << dtype_name(t);
    } else {
      ASSERT_TRUE(name.has_value()) << dtype_name(t);
      EXPECT_EQ(dtype_from_safetensors(*name), t);
    }
  }
  EXPECT_EQ(dtype_from_safetensors("F8_E4M3"), DType::kE4M3);
  EXPECT_EQ(dtype_from_safetensors("F4"), DType::kE2M1);
  EXPECT_EQ(dtype_from_safetensors("F8_E8M0"), DType::kE8M0);
  EXPECT_FALSE(dtype_from_safetensors("I16").has_value());
  EXPECT_FALSE(dtype_from_safetensors("F7").has_value());
}

// ---- Malformed files: one case per validation rule ------------------------------------------------

struct MalformedCase {
  const char* id;
  std::string bytes;
  std::vector<std::string_view> message;  // substrings the error must contain (besides the file name)
};

std::vector<MalformedCase> malformed_cases() {
  using testing::le64;
  using testing::safetensors_bytes;
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight(8, '\0');
  auto one = [&](std::string entry, std::string data) { return safetensors_bytes("{" + entry + "}", data); };
  return {
      {"too_small", "abcde", {"5 bytes", "too small"}},
      {"header_length_beyond_file", le64(1000) + "{}", {"header length 1000", "exceeds the file size"}},
      {"header_length_beyond_limit", le64(200'000'000) + "{}", {"header length 200000000", "limit"}},
      {"bad_json", safetensors_bytes("{\"w\": {", ""), {"not valid JSON"}},
      {"invalid_utf8", safetensors_bytes("{\"\xff\xfe\":{}}", ""), {"not valid JSON"}},
      {"not_an_object", safetensors_bytes("[1, 2]", ""), {"must be a JSON object", "array"}},
      {"duplicate_name", safetensors_bytes("{" + ok_entry + "," + ok_entry + "}", eight), {"'w'", "more than once"}},
      {"entry_not_object", one(R"("w":[1])", ""), {"'w'", "must be an object", "array"}},
      {"missing_dtype", one(R"("w":{"shape":[2],"data_offsets":[0,8]})", eight), {"'w'", "missing \"dtype\""}},
      {"dtype_not_string", one(R"("w":{"dtype":7,"shape":[2],"data_offsets":[0,8]})", eight), {"'w'", "\"dtype\" must be a string", "7"}},
      {"unknown_dtype", one(R"("w":{"dtype":"F7","shape":[2],"data_offsets":[0,8]})", eight), {"'w'", "unknown dtype 'F7'", "BF16"}},
      {"missing_shape", one(R"("w":{"dtype":"F32","data_offsets":[0,8]})", eight), {"'w'", "missing \"shape\""}},
      {"shape_not_array", one(R"("w":{"dtype":"F32","shape":2,"data_offsets":[0,8]})", eight), {"'w'", "\"shape\" must be an array"}},
      {"negative_extent", one(R"("w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]})", eight), {"'w'", "shape[1]=-1"}},
      {"fractional_extent", one(R"("w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})", eight), {"'w'", "shape[0]=2.5"}},
      {"shape_overflow", one(R"("w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})", eight), {"'w'", "overflows"}},
      {"fp4_partial_byte", one(R"("w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]})", "ab"), {"'w'", "12 bits"}},
      {"missing_offsets", one(R"("w":{"dtype":"F32","shape":[2]})", eight), {"'w'", "missing \"data_offsets\""}},
      {"offsets_wrong_count", one(R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]})", eight), {"'w'", "[0,4,8]"}},
      {"negative_offset", one(R"("w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]})", eight), {"'w'", "[-8,0]"}},
      {"end_before_begin", one(R"("w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]})", eight), {"'w'", "[8, 0]", "end is before begin"}},
      {"offsets_beyond_data", one(R"("w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]})", eight), {"'w'", "[0, 16]", "8 bytes"}},
      {"byte_count_mismatch", one(R"("w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,8]})", eight), {"'w'", "hold 8 bytes", "needs 12"}},
      {"overlap",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight),
       {"'a' [0, 8)", "'b' [4, 8)", "overlap"}},
      {"gap",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}})", eight),
       {"bytes [4, 6)", "belong to no tensor", "'b'"}},
      {"trailing_bytes", one(ok_entry, eight + "xyz"), {"11 bytes", "only [0, 8)"}},
      {"metadata_not_object", safetensors_bytes(R"({"__metadata__":[1]})", ""), {"__metadata__", "array"}},
      {"metadata_value_not_string", safetensors_bytes(R"({"__metadata__":{"step":3}})", ""), {"__metadata__['step']", "string", "3"}},
  };
}

class SafetensorsMalformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(SafetensorsMalformed, IsRejectedWithAClearMessage) {
  TempDir dir;
  const auto path = dir / "bad.safetensors";
  testing::write_file(path, GetParam().bytes);
  auto file = SafetensorsFile::open(path);
  ASSERT_FALSE(file.ok()) << GetParam().id;
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument) << file.status().to_string();
  EXPECT_NE(file.status().message().find(path.string()), std::string::npos) << file.status().message();
  for (std::string_view part : GetParam().message)
    EXPECT_NE(file.status().message().find(part), std::string::npos) << "'" << file.status().message() << "' lacks '" << part << "'";
}

INSTANTIATE_TEST_SUITE_P(Rules, SafetensorsMalformed, ::testing::ValuesIn(malformed_cases()),
                         [](const auto& info) { return std::string(info.param.id); });

TEST(Safetensors, MissingFileIsNotFound) {
  TempDir dir;
  MOEKIT_EXPECT_ERROR(SafetensorsFile::open(dir / "nope.safetensors").status(), StatusCode::kNotFound, "nope.safetensors");
}

// ---- Writer errors ---------------------------------------------------------------------------------

TEST(Safetensors, WriterRejectsWhatItCannotExpressAndLeavesNothing) {
  TempDir dir;
  Tensor i4 = testing::make_tensor(DType::kI4, {4});
  Tensor f = testing::make_tensor(DType::kF32, {2, 2});
  auto write = [&](std::vector<NamedTensor> tensors) { return write_safetensors(dir / "out.safetensors", tensors); };
  MOEKIT_EXPECT_ERROR(write({{"q", i4.view()}}), StatusCode::kInvalidArgument, "'q'", "i4", "safetensors cannot express");
  MOEKIT_EXPECT_ERROR(write({{"a", f.view()}, {"a", f.view()}}), StatusCode::kInvalidArgument, "'a'", "twice");
  MOEKIT_EXPECT_ERROR(write({{"__metadata__", f.view()}}), StatusCode::kInvalidArgument, "__metadata__", "reserved");
  MOEKIT_EXPECT_ERROR(write({{"", f.view()}}), StatusCode::kInvalidArgument, "empty");
  MOEKIT_EXPECT_ERROR(write({{"d", TensorView()}}), StatusCode::kInvalidArgument, "'d'", "default");
  const int64_t shape[] = {2, 2}, strides[] = {1, 2};
  auto transposed = TensorView::create(f.data(), DType::kF32, shape, strides);
  ASSERT_TRUE(transposed.ok());
  MOEKIT_EXPECT_ERROR(write({{"t", *transposed}}), StatusCode::kInvalidArgument, "'t'", "not contiguous");
  MOEKIT_EXPECT_ERROR(write_safetensors(dir / "no" / "such" / "dir.safetensors", std::vector<NamedTensor>{{"a", f.view()}}),
                      StatusCode::kIoError, "cannot create");
  EXPECT_EQ(dir.file_count(), 0u);
}

// ---- Sharded checkpoints ---------------------------------------------------------------------------

class SafetensorsSharded : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = testing::make_tensor(DType::kBF16, {2, 4});
    b_ = testing::make_tensor(DType::kF32, {3});
    c_ = testing::make_tensor(DType::kU8, {5});
    testing::fill_bytes(a_, 1);
    testing::fill_bytes(b_, 2);
    testing::fill_bytes(c_, 3);
    ASSERT_TRUE(write_safetensors(dir_ / "model-00001-of-00002.safetensors", std::vector<NamedTensor>{{"a", a_.view()}, {"b", b_.view()}}).ok());
    ASSERT_TRUE(write_safetensors(dir_ / "model-00002-of-00002.safetensors", std::vector<NamedTensor>{{"c", c_.view()}}).ok());
  }
  void write_index(const std::string& weight_map) {
    testing::write_file(dir_ / "model.safetensors.index.json", R"({"metadata": {"total_size": 33}, "weight_map": )" + weight_map + "}");
  }
  TempDir dir_;
  Tensor a_, b_, c_;
};

TEST_F(SafetensorsSharded, OpensShardsOnDemand) {
  write_index(R"({"a": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors",
                  "b": "model-00001-of-00002.safetensors"})");
  for (const auto& path : {dir_.path(), dir_ / "model.safetensors.index.json"}) {
    auto ckpt = SafetensorsCheckpoint::open(path);
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
    EXPECT_TRUE(ckpt->is_sharded());
    EXPECT_EQ(ckpt->names(), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_TRUE(ckpt->contains("b"));
    EXPECT_FALSE(ckpt->contains("d"));
    EXPECT_EQ(ckpt->opened_files().size(), 0u);
    auto c = ckpt->view("c");
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_TRUE(testing::same_bytes(*c, c_));
    EXPECT_EQ(ckpt->opened_files().size(), 1u);
    auto a = ckpt->view("a");
    ASSERT_TRUE(a.ok());
    EXPECT_TRUE(testing::same_bytes(*a, a_));
    auto b = ckpt->info("b");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->dtype_name, "F32");
    EXPECT_EQ(ckpt->opened_files().size(), 2u);
    MOEKIT_EXPECT_ERROR(ckpt->view("d").status(), StatusCode::kNotFound, "'d'", "weight_map");
  }
}

TEST_F(SafetensorsSharded, IndexErrors) {
  write_index(R"({"a": "model-00002-of-00002.safetensors", "z": "model-00009-of-00009.safetensors"})");
  auto ckpt = SafetensorsCheckpoint::open(dir_.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  MOEKIT_EXPECT_ERROR(ckpt->view("a").status(), StatusCode::kNotFound, "maps 'a'", "model-00002-of-00002.safetensors", "does not hold it");
  MOEKIT_EXPECT_ERROR(ckpt->view("z").status(), StatusCode::kNotFound, "model-00009-of-00009.safetensors", "'z'");

  write_index(R"({"a": "../elsewhere.safetensors"})");
  MOEKIT_EXPECT_ERROR(SafetensorsCheckpoint::open(dir_.path()).status(), StatusCode::kInvalidArgument, "weight_map['a']", "relative path");
  write_index(R"({"a": 3})");
  MOEKIT_EXPECT_ERROR(SafetensorsCheckpoint::open(dir_.path()).status(), StatusCode::kInvalidArgument, "weight_map['a']", "string");
  testing::write_file(dir_ / "model.safetensors.index.json", R"({"metadata": {}})");
  MOEKIT_EXPECT_ERROR(SafetensorsCheckpoint::open(dir_.path()).status(), StatusCode::kInvalidArgument, "weight_map");
  testing::write_file(dir_ / "model.safetensors.index.json", R"({"weight_map": )");
  MOEKIT_EXPECT_ERROR(SafetensorsCheckpoint::open(dir_.path()).status(), StatusCode::kInvalidArgument, "not valid JSON");

  std::filesystem::remove(dir_ / "model.safetensors.index.json");
  MOEKIT_EXPECT_ERROR(SafetensorsCheckpoint::open(dir_.path()).status(), StatusCode::kNotFound, "model.safetensors.index.json",
                      "2 other .safetensors files");
}

TEST_F(SafetensorsSharded, SingleFileCheckpoint) {
  auto ckpt = SafetensorsCheckpoint::open(dir_ / "model-00001-of-00002.safetensors");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_FALSE(ckpt->is_sharded());
  EXPECT_EQ(ckpt->names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ckpt->opened_files().size(), 1u);
  MOEKIT_EXPECT_ERROR(ckpt->view("c").status(), StatusCode::kNotFound, "'c'");
  std::filesystem::rename(dir_ / "model-00001-of-00002.safetensors", dir_ / "model.safetensors");
  auto by_dir = SafetensorsCheckpoint::open(dir_.path());
  ASSERT_TRUE(by_dir.ok()) << by_dir.status().to_string();
  EXPECT_FALSE(by_dir->is_sharded());
  EXPECT_TRUE(by_dir->contains("a"));
}

}  // namespace
}  // namespace moekit
