#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz: every parser of outside input, under ASan and
# UBSan) in build-fuzz/ with clang, then runs each for SECONDS (default 60), starting from its
# seeds in tests/fuzz/corpus/<target>/. Exits non-zero when a target crashes, leaks or hits
# undefined behaviour; the input that did it is kept in build-fuzz/crashes/<target>/ and named
# in the output (reproduce: build-fuzz/tests/fuzz/<target> <file>).
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
"$root/scripts/deps.sh" >/dev/null
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ is missing (apt-get install clang)" >&2
  exit 1
fi
build="$root/build-fuzz"
jobs=$(nproc 2>/dev/null || echo 2)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
source "$root/scripts/flavours.sh"
mapfile -t flavour < <(flavour_cmake_args fuzz)
mapfile -t flavour_vars < <(flavour_env fuzz)
env "${flavour_vars[@]}" cmake -S "$root" -B "$build" "${flavour[@]}" ${launcher[@]+"${launcher[@]}"} >/dev/null
cmake --build "$build" -j "$jobs" --target fuzz_all
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for f in "$root"/tests/fuzz/fuzz_*.cc; do targets+=("$(basename "$f" .cc)"); done
fi
failed=()
for t in "${targets[@]}"; do
  seeds="$root/tests/fuzz/corpus/$t"
  found="$build/corpus/$t"  # new inputs go here, never into the committed seeds
  crashes="$build/crashes/$t"
  mkdir -p "$found" "$crashes"
  [[ -d $seeds ]] || seeds=
  echo "fuzz.sh: $t for ${seconds}s"
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$crashes/" "$found" ${seeds:+"$seeds"} \
      > "$build/$t.log" 2>&1; then
    failed+=("$t")
    echo "fuzz.sh: $t FAILED; input kept in $crashes/:" >&2
    ls "$crashes" >&2
    grep -E "ERROR|SUMMARY|runtime error" "$build/$t.log" | head -5 >&2 || true
  else
    grep -E "stat::number_of_executed_runs|cov:" "$build/$t.log" | tail -2 | tr '\n' ' '
    echo
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} target(s), ${seconds}s each, no crash"
