#include "support/fma_peak.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "support/amx_state.h"

namespace tensortune {

namespace {

// Twelve accumulators: with two pipes of four-cycle latency, eight keep both busy; twelve leave
// slack for the loop's own instructions.
constexpr int kAccumulators = 12;
constexpr long kIterations = 20'000'000;

// AVX-VNNI (CPUID leaf 7, sub-leaf 1, EAX bit 4), read directly: clang 14's
// __builtin_cpu_supports does not know the feature's name.
bool has_avx_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  return (eax & (1u << 4)) != 0 && __builtin_cpu_supports("avx2");
}

__attribute__((target("avx512f,avx512vnni"))) int dot_loop_512(long iterations) {
  __m512i acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (long n = 0; n < iterations; ++n)
    for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  __m512i sum = acc[0];
  for (int i = 1; i < kAccumulators; ++i) sum = _mm512_add_epi32(sum, acc[i]);
  return _mm512_reduce_add_epi32(sum);
}

__attribute__((target("avx2,avxvnni"))) int dot_loop_256(long iterations) {
  __m256i acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm256_set1_epi32(i);
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
  for (long n = 0; n < iterations; ++n)
    for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], a, b);
  __m256i sum = acc[0];
  for (int i = 1; i < kAccumulators; ++i) sum = _mm256_add_epi32(sum, acc[i]);
  int lanes[8];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), sum);
  int s = 0;
  for (int v : lanes) s += v;
  return s;
}

// Four 16 x 16 int32 tiles, each += a 16 x 64 uint8 tile times a 64 x 16 int8 one (`tdpbusd`,
// 16 x 16 x 64 multiply-adds), from two A and two B tiles loaded once: the tile unit's peak.
struct TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile,amx-int8"))) int tile_loop(long iterations) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.bytes_per_row[t] = 64;
  }
  alignas(64) static thread_local uint8_t a[16 * 64];
  alignas(64) static thread_local int8_t b[16 * 64];
  alignas(64) static thread_local int32_t c[16 * 16];
  for (int i = 0; i < 16 * 64; ++i) {
    a[i] = static_cast<uint8_t>(i % 7);
    b[i] = static_cast<int8_t>(i % 5 - 2);
  }
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, a, 64);
  _tile_loadd(5, a, 64);
  _tile_loadd(6, b, 64);
  _tile_loadd(7, b, 64);
  for (long n = 0; n < iterations; ++n) {
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  _tile_stored(0, c, 64);
  _tile_release();
  return c[0];
}

// `fmas` multiply-adds in kChains independent chains: one chain is bound by the FMA latency,
// enough of them by the pipes (the peak loop and the chain probe).
template <int kChains>
__attribute__((target("avx512f"))) float chain_512(long fmas) {
  __m512 acc[kChains];
#pragma GCC unroll 16
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long n = 0; n < fmas / kChains; ++n)
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 sum = acc[0];
#pragma GCC unroll 16
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_reduce_add_ps(sum);
}

template <int kChains>
__attribute__((target("avx2,fma"))) float chain_256(long fmas) {
  __m256 acc[kChains];
#pragma GCC unroll 16
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long n = 0; n < fmas / kChains; ++n)
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 sum = acc[0];
#pragma GCC unroll 16
  for (int i = 1; i < kChains; ++i) sum = _mm256_add_ps(sum, acc[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}

// The probe's FMAs per timing: the same count in one chain and in sixteen (twelve with AVX2's
// sixteen registers).
constexpr long kChainFmas = 1 << 20;

double seconds_of(float (*loop)(long)) {
  volatile float sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  sink = sink + loop(kChainFmas);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `loop` on `threads` threads at once, five times, and keeps the fastest round: the
// peak is what the pipes can do, so the least disturbed round is the truest.
template <typename Loop>
double best_seconds(int threads, Loop loop) {
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    volatile double sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&] { sink = sink + static_cast<double>(loop(kIterations)); });
    for (auto& w : workers) w.join();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

Peak measured_fma_peak(int threads) {
  threads = std::max(threads, 1);
  const bool wide = __builtin_cpu_supports("avx512f");
  // kIterations steps of kAccumulators chains, counted in FMAs.
  const auto fmas = [](float (*chains)(long)) {
    return [chains](long iterations) { return chains(iterations * kAccumulators); };
  };
  const double seconds = wide ? best_seconds(threads, fmas(chain_512<kAccumulators>))
                              : best_seconds(threads, fmas(chain_256<kAccumulators>));
  const int lanes = wide ? 16 : 8;
  const double ops = 2.0 * lanes * kAccumulators * static_cast<double>(kIterations) * threads;
  return {ops / seconds / 1e9, lanes * 32};
}

Peak measured_int8_peak(int threads) {
  threads = std::max(threads, 1);
  if (process_runs_amx_int8()) {
    // A tile instruction does 48x a 512-bit vpdpbusd's work: fewer iterations.
    const long iterations = kIterations / 16;
    const double seconds = best_seconds(threads, [&](long) { return tile_loop(iterations); });
    const double ops = 2.0 * 4 * 16 * 16 * 64 * static_cast<double>(iterations) * threads;
    return {ops / seconds / 1e9, 0, true};
  }
  const bool wide = __builtin_cpu_supports("avx512vnni");
  if (!wide && !has_avx_vnni()) return {};
  const double seconds =
      wide ? best_seconds(threads, dot_loop_512) : best_seconds(threads, dot_loop_256);
  const int bytes = wide ? 64 : 32;  // one multiply-add per byte pair
  const double ops = 2.0 * bytes * kAccumulators * static_cast<double>(kIterations) * threads;
  return {ops / seconds / 1e9, bytes * 8};
}

FmaChains probe_fma_chains() {
  const bool wide = __builtin_cpu_supports("avx512f");
  if (!wide && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return {};
  float (*one)(long) = wide ? chain_512<1> : chain_256<1>;
  float (*independent)(long) = wide ? chain_512<16> : chain_256<12>;
  const int many = wide ? 16 : 12;
  // Interleaved rounds, the fastest of each kept: a round the OS disturbed only runs slower.
  double latency = 1e30, throughput = 1e30;
  for (int round = 0; round < 7; ++round) {
    latency = std::min(latency, seconds_of(one));
    throughput = std::min(throughput, seconds_of(independent));
  }
  const double fmas_many = static_cast<double>(kChainFmas / many * many);
  FmaChains c;
  c.ratio = (latency / static_cast<double>(kChainFmas)) / (throughput / fmas_many);
  // Snapped to a latency of 3-6 cycles times one or two pipes: a ratio of 7.5 on a loaded
  // machine is a two-pipe core of four cycles, not a CPU of seven.
  int nearest = 0;
  for (int plausible : {3, 4, 5, 6, 8, 10, 12})
    if (nearest == 0 || std::abs(c.ratio - plausible) < std::abs(c.ratio - nearest))
      nearest = plausible;
  c.chains = std::min(nearest, many);
  c.vector_bits = wide ? 512 : 256;
  c.peak_gflops = 2.0 * (wide ? 16 : 8) * fmas_many / throughput / 1e9;
  return c;
}

}  // namespace tensortune
