// .npy reading and writing: round trip, bytes as numpy writes them, and every malformed input
// gets a message naming the problem.
#include "support/npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace tt = tensortune;

TEST(Npy, RoundTrip) {
  tt::Tensor a = tt::Tensor::zeros({2, 3});
  for (int i = 0; i < 6; ++i) a.f32[i] = i * 0.5f;
  const std::string bytes = tt::serialize_npy(a);
  EXPECT_EQ((bytes.size() - 6 * 4) % 64, 0u);
  auto b = tt::parse_npy(bytes, "mem");
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(b->shape, a.shape);
  EXPECT_EQ(b->f32, a.f32);
}

TEST(Npy, ReadsNumpyFloat64AndOneDimensional) {
  // np.save of np.arange(3, dtype=np.float64): header written by numpy 1.24.
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size());
  bytes += '\0';
  bytes += header;
  for (double v : {0.0, 1.0, 2.0}) bytes.append(reinterpret_cast<const char*>(&v), 8);
  auto a = tt::parse_npy(bytes, "x.npy");
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(a->shape, std::vector<int64_t>{3});
  EXPECT_EQ(a->f32, (std::vector<float>{0, 1, 2}));
}

TEST(Npy, TruncatedDataIsAClearError) {
  tt::Tensor a = tt::Tensor::zeros({4, 4});
  std::string bytes = tt::serialize_npy(a);
  bytes.resize(bytes.size() - 5);
  auto r = tt::parse_npy(bytes, "w.npy");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("w.npy: data is truncated"), std::string::npos)
      << r.error().message;
}

TEST(Npy, TruncatedHeaderNotNpyAndBadDtype) {
  std::string bytes = tt::serialize_npy(tt::Tensor::zeros({2}));
  auto r = tt::parse_npy(bytes.substr(0, 20), "h.npy");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("header is truncated"), std::string::npos);
  r = tt::parse_npy("hello world, not numpy", "t.txt");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("not a .npy file"), std::string::npos);
  std::string u2 = bytes;
  u2.replace(u2.find("<f4"), 3, "<c8");
  r = tt::parse_npy(u2, "u.npy");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("dtype '<c8' is not supported"), std::string::npos);
  std::string big_endian = bytes;
  big_endian.replace(big_endian.find("<f4"), 3, ">i4");
  r = tt::parse_npy(big_endian, "b.npy");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("'>i4' is not supported"), std::string::npos);
}

namespace {

// A version 1 .npy as numpy writes it: the header padded to 64 bytes, then the raw elements.
std::string npy_bytes(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size());
  bytes += '\0';
  return bytes + header + data;
}

}  // namespace

// np.array([[1, -2], [3, 2**31 - 1]], np.int32), np.array([True, False, True]),
// np.array([0, 1, 200, 255], np.uint8), np.array([-128, -1, 0, 127], np.int8): read with their
// dtypes, and written back byte for byte.
TEST(Npy, IntegerAndBoolDtypesReadAndWriteAsNumpyDoes) {
  struct Case {
    std::string descr, shape, data;
    tt::DType dtype;
    std::vector<int64_t> values;
  };
  const int32_t i32[] = {1, -2, 3, 2147483647};
  const Case cases[] = {
      {"<i4",
       "(2, 2)",
       std::string(reinterpret_cast<const char*>(i32), 16),
       tt::DType::kInt32,
       {1, -2, 3, 2147483647}},
      {"|b1", "(3,)", std::string("\x01\x00\x01", 3), tt::DType::kBool, {1, 0, 1}},
      {"|u1", "(4,)", std::string("\x00\x01\xc8\xff", 4), tt::DType::kUInt8, {0, 1, 200, 255}},
      {"|i1", "(4,)", std::string("\x80\xff\x00\x7f", 4), tt::DType::kInt8, {-128, -1, 0, 127}},
      {"<i2", "(2,)", std::string("\x00\x80\xff\x7f", 4), tt::DType::kInt16, {-32768, 32767}},
      {"<u2", "(2,)", std::string("\x00\x80\xff\xff", 4), tt::DType::kUInt16, {32768, 65535}},
      {"<u4", "(1,)", std::string("\xff\xff\xff\xff", 4), tt::DType::kUInt32, {4294967295}},
      {"<u8",
       "(1,)",
       std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8),
       tt::DType::kUInt64,
       {std::numeric_limits<int64_t>::max()}},
  };
  for (const auto& c : cases) {
    const std::string bytes = npy_bytes(c.descr, c.shape, c.data);
    auto t = tt::parse_npy(bytes, c.descr);
    ASSERT_TRUE(t.has_value()) << t.error().message;
    EXPECT_EQ(t->dtype, c.dtype) << c.descr;
    EXPECT_EQ(t->i64, c.values) << c.descr;
    EXPECT_EQ(tt::serialize_npy(*t), bytes) << c.descr;
  }
}

// ONNX's Cast and numpy's astype: floats truncate toward zero, integers wrap in two's
// complement, bool is "nonzero"; NaN and values beyond int64 do not crash.
TEST(Dtypes, CastRulesWrapTruncateAndSaturate) {
  using tt::DType;
  EXPECT_EQ(tt::float_to_integer(DType::kInt32, 3.7), 3);
  EXPECT_EQ(tt::float_to_integer(DType::kInt32, -3.7), -3);
  EXPECT_EQ(tt::float_to_integer(DType::kUInt8, 300.0), 44);  // 300 mod 256
  EXPECT_EQ(tt::float_to_integer(DType::kInt8, -129.0), 127);
  EXPECT_EQ(tt::float_to_integer(DType::kBool, 0.25), 1);
  EXPECT_EQ(tt::float_to_integer(DType::kBool, 0.0), 0);
  EXPECT_EQ(tt::float_to_integer(DType::kInt64, std::numeric_limits<double>::quiet_NaN()), 0);
  EXPECT_EQ(tt::float_to_integer(DType::kInt64, 1e30), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(tt::float_to_integer(DType::kInt64, -1e30), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(tt::wrap_integer(DType::kInt32, int64_t{1} << 31), -(int64_t{1} << 31));
  EXPECT_EQ(tt::wrap_integer(DType::kUInt8, -1), 255);
  EXPECT_EQ(tt::wrap_integer(DType::kBool, -7), 1);
  EXPECT_EQ(tt::wrap_integer(DType::kInt64, -7), -7);
  EXPECT_EQ(tt::wrap_integer(DType::kInt16, 40000), 40000 - 65536);
  EXPECT_EQ(tt::wrap_integer(DType::kUInt16, -1), 65535);
  EXPECT_EQ(tt::wrap_integer(DType::kUInt32, -1), 4294967295);
  EXPECT_EQ(tt::float_to_integer(DType::kInt16, -40000.5), -40000 + 65536);
  for (DType d : tt::kAllDTypes) {
    DType back;
    ASSERT_TRUE(tt::dtype_from_name(tt::dtype_name(d), &back));
    EXPECT_EQ(back, d);
  }
  DType unused;
  EXPECT_FALSE(tt::dtype_from_name("complex64", &unused));
}

// np.array([1, -2, 65504, 2**-24], np.float16) and np.array([0.5, -3.25], np.float64): read
// as their dtypes (values held in float32) and written back byte for byte; a uint64 from 2^63
// on is refused, never read as a negative number.
TEST(Npy, Float16Float64AndLargeUnsignedValues) {
  const std::string f2 =
      npy_bytes("<f2", "(4,)", std::string("\x00\x3c\x00\xc0\xff\x7b\x01\x00", 8));
  auto h = tt::parse_npy(f2, "h.npy");
  ASSERT_TRUE(h.has_value()) << h.error().message;
  EXPECT_EQ(h->dtype, tt::DType::kFloat16);
  EXPECT_EQ(h->f32, (std::vector<float>{1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24)}));
  EXPECT_EQ(tt::serialize_npy(*h), f2);
  const double d[] = {0.5, -3.25};
  const std::string f8 =
      npy_bytes("<f8", "(2,)", std::string(reinterpret_cast<const char*>(d), 16));
  auto w = tt::parse_npy(f8, "d.npy");
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->dtype, tt::DType::kFloat64);
  EXPECT_EQ(w->f32, (std::vector<float>{0.5f, -3.25f}));
  EXPECT_EQ(tt::serialize_npy(*w), f8);
  auto big = tt::parse_npy(npy_bytes("<u8", "(1,)", std::string(7, '\0') + "\x80"), "u.npy");
  ASSERT_FALSE(big.has_value());
  EXPECT_NE(big.error().message.find("values from 2^63 on are not supported"), std::string::npos)
      << big.error().message;
}

TEST(Npy, MissingFileIsNotFound) {
  auto r = tt::read_npy("/nonexistent/x.npy");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, tt::ErrorCode::kNotFound);
}

// int64 tensors (shape outputs, indices) are written as int64, not narrowed to float: the header
// says '<i8' and the data are the eight-byte little-endian values, 64-byte aligned like numpy's.
TEST(Npy, Int64TensorsAreWrittenAsInt64) {
  const auto t = tt::Tensor::from_ints({3}, {1, -2, int64_t{1} << 40});
  const std::string bytes = tt::serialize_npy(t);
  EXPECT_NE(bytes.find("'descr': '<i8'"), std::string::npos);
  ASSERT_EQ(bytes.size() % 64, 24u);  // header padded to 64, then 3 x 8 bytes
  std::vector<int64_t> back(3);
  std::memcpy(back.data(), bytes.data() + bytes.size() - 24, 24);
  EXPECT_EQ(back, t.i64);
}

// Found by fuzz_npy: a shape with a zero dimension, and one whose element count overflows.
TEST(Npy, EmptyArraysReadAndHugeShapesAreRefused) {
  auto npy = [](const std::string& shape) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size());
    bytes += '\0';
    return bytes + header;
  };
  auto empty = tt::parse_npy(npy("(1, 0)"), "e.npy");
  ASSERT_TRUE(empty.has_value()) << empty.error().message;
  EXPECT_EQ(empty->shape, (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(empty->f32.empty());
  auto huge = tt::parse_npy(npy("(4294967296, 4294967296, 16)"), "h.npy");
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().message.find("h.npy: shape"), std::string::npos) << huge.error().message;
  EXPECT_NE(huge.error().message.find("2^40"), std::string::npos) << huge.error().message;
  EXPECT_EQ(tt::num_elements({int64_t{1} << 62, 16}), std::numeric_limits<int64_t>::max())
      << "saturates instead of overflowing";
  EXPECT_EQ(tt::checked_num_elements({int64_t{1} << 62, 16}), -1);
  EXPECT_EQ(tt::checked_num_elements({2, -3}), -1);
  EXPECT_EQ(tt::checked_num_elements({2, 3, 0}), 0);
}
