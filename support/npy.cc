#include "support/npy.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace tensortune {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

Error npy_error(const std::string& what, const std::string& message) {
  return invalid_argument(what + ": " + message);
}

std::string header_value(const std::string& header, const std::string& key) {
  std::regex re("'" + key + "'\\s*:\\s*('[^']*'|True|False|\\([^)]*\\))");
  std::smatch m;
  if (std::regex_search(header, m, re)) return m[1].str();
  return "";
}

}  // namespace

Expected<Tensor> parse_npy(const std::string& bytes, const std::string& what) {
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0)
    return npy_error(what, "not a .npy file (missing \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0;
  size_t offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return npy_error(what, "header is truncated");
    uint32_t len = 0;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = len;
    offset = 12;
  } else {
    return npy_error(what, "format version " + std::to_string(major) + " is not supported");
  }
  if (bytes.size() < offset + header_len)
    return npy_error(what, "header is truncated: " + std::to_string(bytes.size()) +
                               " bytes, header needs " + std::to_string(offset + header_len));
  const std::string header = bytes.substr(offset, header_len);
  const std::string descr = header_value(header, "descr");
  const std::string fortran = header_value(header, "fortran_order");
  const std::string shape_text = header_value(header, "shape");
  if (descr.empty() || fortran.empty() || shape_text.empty())
    return npy_error(what, "header lacks descr, fortran_order or shape: " + header);
  if (fortran != "False") return npy_error(what, "fortran_order = True is not supported");
  // The element type: numpy's descr (little-endian or byte-sized) -> our dtype and its size.
  struct Element {
    const char* descr;
    DType dtype;
    size_t size;
    bool is_signed;
  };
  static constexpr Element kElements[] = {
      {"'<f4'", DType::kFloat32, 4, true}, {"'<f8'", DType::kFloat32, 8, true},
      {"'<i8'", DType::kInt64, 8, true},   {"'<i4'", DType::kInt32, 4, true},
      {"'|b1'", DType::kBool, 1, false},   {"'|i1'", DType::kInt8, 1, true},
      {"'|u1'", DType::kUInt8, 1, false},
  };
  const Element* element = nullptr;
  for (const auto& e : kElements)
    if (descr == e.descr || (e.size == 4 && e.dtype == DType::kFloat32 && descr == "'|f4'"))
      element = &e;
  if (!element)
    return npy_error(what, "dtype " + descr +
                               " is not supported (float32, float64, int64, int32, bool, int8 "
                               "or uint8, little-endian)");
  const size_t elem_size = element->size;
  Tensor out;
  std::string dims = shape_text.substr(1, shape_text.size() - 2);
  std::stringstream ss(dims);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(" ");
    if (b == std::string::npos) continue;
    try {
      size_t used = 0;
      long long d = std::stoll(item.substr(b), &used);
      if (d < 0) return npy_error(what, "shape has a negative dimension " + item);
      out.shape.push_back(d);
    } catch (const std::exception&) {
      return npy_error(what, "shape entry '" + item + "' is not an integer");
    }
  }
  const int64_t n = checked_num_elements(out.shape);
  if (n < 0)
    return npy_error(what, "shape " + shape_to_string(out.shape) +
                               " is negative or has more than "
                               "2^40 elements");
  const size_t data_offset = offset + header_len;
  const size_t need = static_cast<size_t>(n) * elem_size;
  if (bytes.size() - data_offset < need)
    return npy_error(what, "data is truncated: shape " + shape_to_string(out.shape) + " needs " +
                               std::to_string(need) + " bytes, file has " +
                               std::to_string(bytes.size() - data_offset));
  out.dtype = element->dtype;
  const char* data = bytes.data() + data_offset;
  if (is_float(out.dtype)) {
    out.f32.resize(n);
    if (n == 0) return out;
    if (elem_size == 4) {
      std::memcpy(out.f32.data(), data, need);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, data + i * 8, 8);
        out.f32[i] = static_cast<float>(v);
      }
    }
    return out;
  }
  out.i64.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const char* p = data + i * elem_size;
    int64_t v = 0;
    if (elem_size == 8) {
      std::memcpy(&v, p, 8);
    } else if (elem_size == 4) {
      int32_t w;
      std::memcpy(&w, p, 4);
      v = w;
    } else {
      v = element->is_signed ? static_cast<int8_t>(*p) : static_cast<uint8_t>(*p);
    }
    out.i64[i] = wrap_integer(out.dtype, v);  // a bool byte other than 0/1 reads as 1
  }
  return out;
}

Expected<Tensor> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_npy(buffer.str(), path);
}

std::string serialize_npy(const Tensor& array) {
  std::string shape = "(";
  for (size_t i = 0; i < array.shape.size(); ++i) {
    shape += std::to_string(array.shape[i]);
    if (array.shape.size() == 1 || i + 1 < array.shape.size()) shape += ",";
    if (i + 1 < array.shape.size()) shape += " ";
  }
  shape += ")";
  const char* descr = "<f4";
  size_t elem_size = 4;
  switch (array.dtype) {
    case DType::kFloat32:
      break;
    case DType::kInt64:
      descr = "<i8", elem_size = 8;
      break;
    case DType::kInt32:
      descr = "<i4", elem_size = 4;
      break;
    case DType::kBool:
      descr = "|b1", elem_size = 1;
      break;
    case DType::kInt8:
      descr = "|i1", elem_size = 1;
      break;
    case DType::kUInt8:
      descr = "|u1", elem_size = 1;
      break;
  }
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, ending the header with '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  if (is_float(array.dtype)) {
    out.append(reinterpret_cast<const char*>(array.f32.data()), array.f32.size() * sizeof(float));
  } else {
    for (int64_t v : array.i64) {
      char b[8];
      std::memcpy(b, &v, 8);  // little-endian: the low bytes first
      out.append(b, elem_size);
    }
  }
  return out;
}

Status write_npy(const std::string& path, const Tensor& array) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return unavailable("cannot open " + path + " for writing");
  const std::string bytes = serialize_npy(array);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return unavailable("writing " + path + " failed");
  return ok_status();
}

}  // namespace tensortune
