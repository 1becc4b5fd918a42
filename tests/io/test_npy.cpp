// The .npy reader and writer: round trips, files written by hand in each format version, the bytes
// numpy's own writer produces, and malformed files.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/io_test_util.h"
#include "moekit/npy.h"

namespace moekit {
namespace {

using testing::TempDir;

// An .npy image: magic, version, little-endian header length (2 bytes for 1.0, 4 otherwise), header.
std::string npy_bytes(int major, std::string header, std::string_view data) {
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  const size_t n = header.size();
  s += static_cast<char>(n & 0xFF);
  s += static_cast<char>((n >> 8) & 0xFF);
  if (major >= 2) {
    s += static_cast<char>((n >> 16) & 0xFF);
    s += static_cast<char>((n >> 24) & 0xFF);
  }
  return s + header + std::string(data);
}

std::string f32_bytes(std::initializer_list<float> values) {
  std::string s;
  for (float f : values) s.append(reinterpret_cast<const char*>(&f), 4);
  return s;
}

TEST(Npy, RoundTripEveryNumpyDtypeAndShape) {
  TempDir dir;
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {5}, {2, 3, 4}, {1, 0, 3}};
  for (DType dtype : {DType::kF64, DType::kF32, DType::kF16, DType::kI64, DType::kI32, DType::kI8, DType::kU8}) {
    for (const auto& shape : shapes) {
      SCOPED_TRACE(fmt::format("{} [{}]", dtype_name(dtype), fmt::join(shape, ", ")));
      Tensor t = testing::make_tensor(dtype, shape);
      testing::fill_bytes(t, static_cast<uint32_t>(shape.size()) + 7);
      const auto path = dir / "t.npy";
      ASSERT_TRUE(write_npy(path, t).ok());
      const std::string bytes = testing::read_file(path);
      const size_t header_end = 10 + (static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8));
      EXPECT_EQ(header_end % 64, 0u) << "numpy aligns the data to 64 bytes";
      EXPECT_EQ(bytes[header_end - 1], '\n');
      auto back = read_npy(path);
      ASSERT_TRUE(back.ok()) << back.status().to_string();
      EXPECT_EQ(back->dtype(), dtype);
      EXPECT_EQ(testing::shape_of(*back), shape);
      EXPECT_TRUE(testing::same_bytes(*back, t));
    }
  }
}

// The header numpy writes: "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", spaces, '\n'.
TEST(Npy, WritesTheHeaderNumpyWrites) {
  TempDir dir;
  Tensor t = testing::make_tensor(DType::kF32, {2, 3});
  testing::fill_values(t, [](int64_t i) { return static_cast<double>(i); });
  ASSERT_TRUE(write_npy(dir / "a.npy", t).ok());
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');  // the dict is 59 bytes: data at 128
  header += '\n';
  EXPECT_EQ(testing::read_file(dir / "a.npy"), npy_bytes(1, header, f32_bytes({0, 1, 2, 3, 4, 5})));

  Tensor v = testing::make_tensor(DType::kU8, {3});
  ASSERT_TRUE(write_npy(dir / "v.npy", v).ok());
  EXPECT_NE(testing::read_file(dir / "v.npy").find("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"), std::string::npos);
}

TEST(Npy, Bf16IsWrittenWidenedToFloat32) {
  TempDir dir;
  Tensor t = testing::make_tensor(DType::kBF16, {4});
  const std::vector<double> values = {1.0, -2.5, 3.0e38, 0.0078125};
  testing::fill_values(t, [&](int64_t i) { return values[static_cast<size_t>(i)]; });
  ASSERT_TRUE(write_npy(dir / "b.npy", t).ok());
  auto back = read_npy(dir / "b.npy");
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->dtype(), DType::kF32);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(back->data_as<float>()[i], static_cast<float>(load_element(t.data(), DType::kBF16, i)));
}

TEST(Npy, WriterRejectsDtypesNumpyLacks) {
  TempDir dir;
  for (DType dtype : {DType::kE4M3, DType::kE5M2, DType::kE2M1, DType::kE8M0, DType::kUE4M3, DType::kI4}) {
    Tensor t = testing::make_tensor(dtype, {2});
    MOEKIT_EXPECT_ERROR(write_npy(dir / "x.npy", t), StatusCode::kInvalidArgument, dtype_name(dtype), "no numpy equivalent", ".safetensors");
  }
  Tensor f = testing::make_tensor(DType::kF32, {2, 2});
  const int64_t shape[] = {2, 2}, strides[] = {1, 2};
  MOEKIT_EXPECT_ERROR(write_npy(dir / "x.npy", TensorView::create(f.data(), DType::kF32, shape, strides).value()),
                      StatusCode::kInvalidArgument, "not contiguous");
  MOEKIT_EXPECT_ERROR(write_npy(dir / "x.npy", TensorView()), StatusCode::kInvalidArgument, "empty");
  EXPECT_EQ(dir.file_count(), 0u);
}

// Files written by hand, one per header variant the reader accepts.
TEST(Npy, ReadsEveryFormatVersionAndAcceptedDescr) {
  TempDir dir;
  struct Case {
    const char* id;
    std::string bytes;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<double> values;
  };
  const std::string i2 = std::string("\xff\xff\x00\x80\x07\x00", 6);  // -1, -32768, 7
  const std::vector<Case> cases = {
      {"v1", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", f32_bytes({1.5f, -2})), DType::kF32, {2}, {1.5, -2}},
      {"v2", npy_bytes(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }\n", f32_bytes({3, 4})), DType::kF32, {1, 2}, {3, 4}},
      {"v3", npy_bytes(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", f32_bytes({5})), DType::kF32, {}, {5}},
      // numpy 2 pads for in-place growth: data at byte 128.
      {"numpy2_padding", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }" + std::string(59, ' ') + "\n", f32_bytes({6})),
       DType::kF32, {1}, {6}},
      {"native_order", npy_bytes(1, "{'descr': '=f4', 'fortran_order': False, 'shape': (1,)}", f32_bytes({7})), DType::kF32, {1}, {7}},
      {"double_quotes_any_key_order", npy_bytes(1, "{\"shape\": (1,), \"fortran_order\": False, \"descr\": \"<f4\"}", f32_bytes({8})),
       DType::kF32, {1}, {8}},
      {"python2_longs", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1L, 1L), }", f32_bytes({9})), DType::kF32, {1, 1}, {9}},
      {"int16_widened", npy_bytes(1, "{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", i2), DType::kI32, {3}, {-1, -32768, 7}},
      {"bool_as_u8", npy_bytes(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x01\x00\x01", 3)), DType::kU8,
       {3}, {1, 0, 1}},
      {"big_endian_byte", npy_bytes(1, "{'descr': '>i1', 'fortran_order': False, 'shape': (1,), }", "\xfe"), DType::kI8, {1}, {-2}},
      {"fortran_order_is_a_python_bool", npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 2), }", ""), DType::kF64,
       {0, 2}, {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.id);
    testing::write_file(dir / "h.npy", c.bytes);
    auto t = read_npy(dir / "h.npy");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->dtype(), c.dtype);
    EXPECT_EQ(testing::shape_of(*t), c.shape);
    ASSERT_EQ(t->numel(), static_cast<int64_t>(c.values.size()));
    for (size_t i = 0; i < c.values.size(); ++i) EXPECT_EQ(load_element(t->data(), t->dtype(), static_cast<int64_t>(i)), c.values[i]);
  }
}

TEST(Npy, MalformedFilesAreRejectedWithAClearMessage) {
  TempDir dir;
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string two = f32_bytes({1, 2});
  struct Case {
    const char* id;
    std::string bytes;
    StatusCode code;
    std::vector<std::string_view> message;
  };
  const std::vector<Case> cases = {
      {"too_short", "\x93NUM", StatusCode::kInvalidArgument, {"too short"}},
      {"bad_magic", "NOTNUMPY\x10\x00" + ok_dict + two, StatusCode::kInvalidArgument, {"not an .npy file"}},
      {"version_4", npy_bytes(4, ok_dict, two), StatusCode::kUnsupported, {"version 4.0"}},
      {"header_beyond_file", npy_bytes(1, ok_dict, two).substr(0, 40), StatusCode::kInvalidArgument, {"header length", "exceeds the file size"}},
      {"fortran_order", npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", two), StatusCode::kUnsupported,
       {"fortran_order=True"}},
      {"big_endian", npy_bytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", two), StatusCode::kUnsupported,
       {"'>f4'", "big-endian"}},
      {"unsigned32", npy_bytes(1, "{'descr': '<u4', 'fortran_order': False, 'shape': (2,), }", two), StatusCode::kUnsupported,
       {"'<u4'", "no moekit dtype", "f2 f4 f8"}},
      {"complex", npy_bytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", two), StatusCode::kUnsupported, {"'<c8'"}},
      {"no_byte_order", npy_bytes(1, "{'descr': 'f4', 'fortran_order': False, 'shape': (2,), }", two), StatusCode::kInvalidArgument,
       {"'f4'", "byte order"}},
      {"structured", npy_bytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", two), StatusCode::kInvalidArgument,
       {"structured"}},
      {"missing_key", npy_bytes(1, "{'descr': '<f4', 'shape': (2,), }", two), StatusCode::kInvalidArgument, {"fortran_order"}},
      {"unknown_key", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", two), StatusCode::kInvalidArgument,
       {"unexpected key 'x'"}},
      {"negative_extent", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }", two), StatusCode::kInvalidArgument,
       {"not a non-negative integer"}},
      {"not_a_dict", npy_bytes(1, "['descr']", two), StatusCode::kInvalidArgument, {"does not start with '{'"}},
      {"unterminated", npy_bytes(1, "{'descr: '<f4}", two), StatusCode::kInvalidArgument, {"header"}},
      {"trailing_text", npy_bytes(1, ok_dict + " junk", two), StatusCode::kInvalidArgument, {"after the dict"}},
      {"data_too_short", npy_bytes(1, ok_dict, two.substr(0, 6)), StatusCode::kInvalidArgument, {"data is 6 bytes", "needs 8"}},
      {"data_too_long", npy_bytes(1, ok_dict, two + "xx"), StatusCode::kInvalidArgument, {"data is 10 bytes", "needs 8"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.id);
    const auto path = dir / "bad.npy";
    testing::write_file(path, c.bytes);
    const Status s = read_npy(path).status();
    EXPECT_EQ(s.code(), c.code) << s.to_string();
    EXPECT_NE(s.message().find(path.string()), std::string::npos) << s.message();
    for (std::string_view part : c.message) EXPECT_NE(s.message().find(part), std::string::npos) << s.message() << " lacks " << part;
  }
  MOEKIT_EXPECT_ERROR(read_npy(dir / "missing.npy").status(), StatusCode::kNotFound, "missing.npy");
}

}  // namespace
}  // namespace moekit
