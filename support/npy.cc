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

// numpy's little-endian descr of a dtype ("<f4", "<i8", "<b1"...).
std::string npy_descr(DType dtype) {
  const char kind = is_float(dtype)            ? 'f'
                    : dtype == DType::kBool    ? 'b'
                    : is_signed_integer(dtype) ? 'i'
                                               : 'u';
  return std::string("<") + kind + std::to_string(element_size(dtype));
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
  // The element type: numpy's descr (little-endian or byte-sized) -> our dtype.
  const DType* element = nullptr;
  std::string bare = descr.size() > 2 ? descr.substr(1, descr.size() - 2) : descr;
  if (bare.size() == 3 && (bare[0] == '|' || bare[0] == '=')) bare[0] = '<';  // byte order moot
  for (const DType& d : kAllDTypes)
    if (d != DType::kBFloat16 && bare == npy_descr(d)) element = &d;
  if (!element)
    return npy_error(what, "dtype " + descr +
                               " is not supported (little-endian float16/32/64, int8/16/32/64, "
                               "uint8/16/32/64 or bool)");
  const size_t elem_size = static_cast<size_t>(element_size(*element));
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
  out.dtype = *element;
  const char* data = bytes.data() + data_offset;
  if (is_float(out.dtype)) {
    out.f32.resize(n);
    for (int64_t i = 0; i < n; ++i) out.f32[i] = float_from_bytes(out.dtype, data + i * elem_size);
    return out;
  }
  out.i64.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    // The low bytes of the little-endian int64, then wrapped: sign- or zero-extends as the
    // dtype says (and a bool byte other than 0/1 reads as 1).
    uint64_t raw = 0;
    std::memcpy(&raw, data + i * elem_size, elem_size);
    int64_t v = static_cast<int64_t>(raw);
    if (elem_size < 8 && is_signed_integer(out.dtype)) {
      const int shift = 64 - 8 * static_cast<int>(elem_size);
      v = static_cast<int64_t>(raw << shift) >> shift;
    }
    if (out.dtype == DType::kUInt64 && v < 0)
      return npy_error(what, "uint64 element " + std::to_string(i) + " is " + std::to_string(raw) +
                                 ": values from 2^63 on are not supported (held in int64)");
    out.i64[i] = wrap_integer(out.dtype, v);
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
  // numpy has no bfloat16: such arrays are written as the float32 values they are.
  const DType file_dtype = array.dtype == DType::kBFloat16 ? DType::kFloat32 : array.dtype;
  std::string descr = npy_descr(file_dtype);
  if (element_size(file_dtype) == 1) descr[0] = '|';
  const size_t elem_size = static_cast<size_t>(element_size(file_dtype));
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
    for (float v : array.f32) {
      char b[8];
      float_to_bytes(file_dtype, v, b);
      out.append(b, elem_size);
    }
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
