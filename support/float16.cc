#include "support/float16.h"

#include <cstring>

namespace tensortune {

namespace {

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

float float_of(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

// Shifts `value` right by `shift` bits, rounding to nearest with ties to even.
uint32_t shift_right_rounded(uint32_t value, int shift) {
  if (shift <= 0) return value;
  if (shift > 31) return 0;
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
}

}  // namespace

uint16_t float_to_half_bits(float v) {
  const uint32_t b = bits_of(v);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000);
  const int exponent = static_cast<int>((b >> 23) & 0xff);
  const uint32_t mantissa = b & 0x7fffff;
  if (exponent == 0xff)  // infinity, or NaN kept quiet with its top payload bits
    return sign | 0x7c00 | (mantissa ? 0x200 | (mantissa >> 13) : 0);
  // binary16's exponent bias is 15 against float32's 127.
  const int half_exponent = exponent - 127 + 15;
  if (half_exponent >= 0x1f) return sign | 0x7c00;  // beyond the largest finite: infinity
  if (half_exponent <= 0) {
    // A subnormal (or zero): the significand with its implicit 1, scaled by 2^(e-1-14) units
    // of 2^-24. A carry out of the rounding lands on the smallest normal, as it should.
    if (half_exponent < -10) return sign;  // below half the smallest subnormal
    const uint32_t significand = mantissa | 0x800000;
    return sign | static_cast<uint16_t>(shift_right_rounded(significand, 14 - half_exponent));
  }
  // Normal: round the mantissa's 23 bits to 10. A carry runs into the exponent, which is the
  // right result (up to infinity).
  const uint32_t rounded =
      (static_cast<uint32_t>(half_exponent) << 10) + shift_right_rounded(mantissa, 13);
  return sign | static_cast<uint16_t>(rounded >= 0x7c00 ? 0x7c00 : rounded);
}

float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const int exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) return float_of(sign | 0x7f800000 | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return float_of(sign);
    // Subnormal: mantissa * 2^-24, exact in float32.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return float_of(sign | (static_cast<uint32_t>(exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t float_to_bfloat16_bits(float v) {
  const uint32_t b = bits_of(v);
  if ((b & 0x7f800000) == 0x7f800000 && (b & 0x7fffff))  // NaN: keep it quiet
    return static_cast<uint16_t>((b >> 16) | 0x40);
  // Round to nearest even on the low 16 bits; a carry into the exponent is right (up to inf).
  const uint32_t rounded = b + 0x7fff + ((b >> 16) & 1);
  return static_cast<uint16_t>(rounded >> 16);
}

float bfloat16_bits_to_float(uint16_t bits) { return float_of(static_cast<uint32_t>(bits) << 16); }

}  // namespace tensortune
