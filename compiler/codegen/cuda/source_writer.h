#pragma once
/// \file
/// Building CUDA C text line by line with indentation, for the emitters.

#include <cstdint>
#include <string>
#include <string_view>

namespace tensortune::codegen::cuda {

class SourceWriter {
 public:
  /// Appends one line at the current indentation.
  SourceWriter& line(std::string_view text) {
    text_.append(2 * static_cast<size_t>(depth_), ' ');
    text_.append(text);
    text_ += '\n';
    return *this;
  }
  /// "for (int v = 0; v < extent; ++v) {" and one level deeper; close() ends it.
  SourceWriter& open_for(std::string_view var, int64_t extent, std::string_view pragma = {}) {
    if (!pragma.empty()) line(pragma);
    std::string head = "for (int ";
    head.append(var).append(" = 0; ").append(var).append(" < ").append(std::to_string(extent));
    head.append("; ++").append(var).append(") {");
    return open(head);
  }
  SourceWriter& open(std::string_view head) {
    line(head);
    ++depth_;
    return *this;
  }
  SourceWriter& close() {
    --depth_;
    return line("}");
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  int depth_ = 0;
};

/// "123" for integer constants in generated code.
inline std::string num(int64_t v) { return std::to_string(v); }

/// A float constant that reads back exactly, valid in CUDA C and C++: "6.0f", "-0.25f",
/// "1.00000001e-07f"; infinities as a division both compilers fold ("(1.0f / 0.0f)").
std::string float_literal(float v);

}  // namespace tensortune::codegen::cuda
