#pragma once
/// \file
/// The 16-bit float formats ONNX stores: IEEE binary16 ("float16", 5 exponent bits) and
/// bfloat16 (float32's 8 exponent bits, 7 mantissa bits). Values of both are held in float32
/// (every one of them is exactly a float32); these functions convert bit patterns and round
/// float32 values onto the formats' grids, as hardware does: to nearest, ties to even.
#include <cstdint>

namespace tensortune {

/// The binary16 bit pattern nearest to `v` (overflow gives infinity, NaN stays a quiet NaN of
/// the same sign, tiny values become subnormals or zero).
uint16_t float_to_half_bits(float v);
/// The float32 equal to a binary16 bit pattern (every binary16 value is a float32).
float half_bits_to_float(uint16_t bits);
/// The bfloat16 bit pattern nearest to `v` (NaN stays NaN).
uint16_t float_to_bfloat16_bits(float v);
/// The float32 equal to a bfloat16 bit pattern.
float bfloat16_bits_to_float(uint16_t bits);

/// `v` rounded to the nearest binary16 / bfloat16 value, as a float32.
inline float round_to_half(float v) { return half_bits_to_float(float_to_half_bits(v)); }
inline float round_to_bfloat16(float v) {
  return bfloat16_bits_to_float(float_to_bfloat16_bits(v));
}

}  // namespace tensortune
