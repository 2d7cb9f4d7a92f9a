#!/usr/bin/env bash
# Installs what is missing, builds, and runs the test suite with ctest (under 10 minutes after
# scripts/demo.sh on a fresh 2-core machine; README). Extra arguments go to ctest (e.g. -R Conv2d).
#   --full   then the deeper stages CI runs (.ci/run): the `deep` tests (whole), then under a
#            time budget (below) the formatting check, each fuzz target for a few seconds, the
#            tests of the tracker, dispatcher, device server and executor under TSan, the
#            shipping tests (--shipping) and the whole suite under ASan and UBSan, the first of
#            them by rotation. Each sanitizer builds a tree of its own: on a fresh machine the
#            first cold build of one takes half an hour (ccache makes the next ones quick).
#   --gpu    then run the tests that need a real GPU and fail if they skip (no GPU, no driver,
#            or a build without the CUDA Toolkit); for machines that have one.
#   --sanitize address,undefined | thread
#            only that sanitizer suite: build a separate tree (build-sanitize-NAME) with those
#            sanitizers and run the suite there (thread: the tests of the tracker, dispatcher,
#            device server and executor); a report fails the test that made it.
#   --budget MINUTES
#            with --full, the stages after the main suite each stop at what is left of this many
#            minutes since the start, reported as not finished rather than failed (default: 38
#            when CI=true, so that the whole CI run stays under 40 minutes; else none; or
#            TT_TEST_BUDGET_MIN)
#   --fuzz SECONDS
#            with --full, each fuzz target runs for SECONDS (scripts/fuzz.sh; default 10, 0 to
#            skip): a crash fails the run, its input kept in build-fuzz/crashes/
#   --shipping
#            only the shipping tests (ctest label `shipping`, about 3 minutes, root): the Debian
#            package from scripts/package.sh, installed, used and removed in a fresh
#            debootstrapped Debian, and the image from deploy/container/build.sh serving a farm
#            (buildah); docs/deploy.md
#   --quick  the suite only (the default; kept for scripts that still say it)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
started=$SECONDS
gpu=0
budget=
sanitize=
fuzz=10
full=0
shipping=0
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --gpu) gpu=1 ;;
    --quick) full=0 ;;
    --full) full=1 ;;
    --shipping) shipping=1 ;;
    --sanitize) sanitize=$2; shift ;;
    --sanitize=*) sanitize=${1#*=} ;;
    --fuzz) fuzz=$2; shift ;;
    --budget) budget=$2; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
"$root/scripts/deps.sh" --test
jobs=$(nproc 2>/dev/null || echo 2)

# Builds build-sanitize-NAME with the sanitizers and runs the suite there (TSan: the tests of
# the tracker, dispatcher, device server and executor, and only their targets are built).
run_sanitized() {
  local which=$1
  shift
  case "$which" in
    address | undefined | address,undefined | undefined,address | thread) ;;
    *) echo "test.sh: --sanitize $which: give address,undefined or thread" >&2; exit 2 ;;
  esac
  local tree="$root/build-sanitize-${which//,/-}"
  local targets=() filter=()
  echo "test.sh: the suite under -fsanitize=$which in $tree"
  source "$root/scripts/flavours.sh"
  local flavour=()
  mapfile -t flavour < <(flavour_cmake_args "$which")
  cmake -S "$root" -B "$tree" "${flavour[@]}" >/dev/null
  if [[ $which == thread ]]; then
    targets=(--target farm_test dispatcher_test backend_test tensortune)
    # Under TSan the tracker's SIGHUP handler never runs (TSan defers asynchronous signals
    # until the receiving thread enters an intercepted call), so the one test that reloads by
    # SIGHUP is left out there; the admin RPC's reload test covers the same path.
    filter=(-L "farm_test|dispatcher_test|backend_test" -E "Sighup")
  else
    # The model corpus compiles 30 real networks twice each: minutes natively, far beyond the
    # CI budget under ASan. Its importer paths are fuzzed (fuzz_onnx) instead.
    filter=(-LE "corpus|shipping")
  fi
  cmake --build "$tree" -j "$jobs" "${targets[@]}"
  # Generated kernels are not instrumented; reports come from our code. LLVM's JIT and gRPC
  # keep some memory until exit on purpose: leaks are reported by the fuzzers instead.
  # handle_segv=0: the farm tests crash workers on purpose and expect them to die by the
  # signal (a real crash still fails its test, without the sanitizer's report).
  # Debian's gRPC and abseil are not instrumented: tests/sanitizers/tsan.supp drops the races
  # TSan sees inside them (every frame theirs); ours are still reported.
  (cd "$tree" &&
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:handle_segv=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:handle_segv=0:suppressions=$root/tests/sanitizers/tsan.supp \
    ctest --output-on-failure -j "$jobs" --timeout 900 "${filter[@]}" "$@")
}

if [[ -n $sanitize ]]; then
  run_sanitized "$sanitize" ${args[@]+"${args[@]}"}
  exit
fi
"$root/scripts/build.sh"
# The deploy/ checks' npm packages (kubernetes-models, yaml), pinned in deploy/test/package.json.
if command -v npm >/dev/null && [[ ! -d "$root/deploy/test/node_modules/kubernetes-models" ]]; then
  npm install --prefix "$root/deploy/test" --no-audit --no-fund --loglevel=error >/dev/null ||
    echo "test.sh: npm install in deploy/test failed: deploy_manifests will skip" >&2
fi
# ONNX Runtime for the model corpus tests (and bench/e2e_bench.js), pinned in bench/ort.
if command -v npm >/dev/null && [[ ! -d "$root/bench/ort/node_modules/onnxruntime-node" ]]; then
  npm install --prefix "$root/bench/ort" --ignore-scripts --no-audit --no-fund --loglevel=error \
    >/dev/null || echo "test.sh: npm install in bench/ort failed: the corpus tests will skip" >&2
fi
shipping_tests=(ctest --test-dir "$root/build" --output-on-failure -j "$jobs" -L shipping)
if [[ $shipping == 1 ]]; then
  "${shipping_tests[@]}" ${args[@]+"${args[@]}"}
  exit
fi
# The quick suite leaves out the `deep` tests (the largest corpus networks, every ONNX node test
# through the CUDA emulation, the GPU check's dry run, the farm's chaos soak): --full runs them
# first, whole and without a budget.
(cd "$root/build" && ctest --output-on-failure -j "$jobs" -LE "shipping|deep" ${args[@]+"${args[@]}"})
if [[ $full == 1 ]]; then
  (cd "$root/build" && ctest --output-on-failure -j "$jobs" -L deep ${args[@]+"${args[@]}"})
fi
# The stages after the main suite under a time budget (--budget MINUTES, or TT_TEST_BUDGET_MIN;
# 38 under CI, whose whole run must stay under 40 minutes, and unlimited otherwise). Each stage is
# timed out at what is left of the budget, and a failure within it fails the run.
#
# Which stage goes first rotates with the commit count (git rev-list --count HEAD, modulo the
# number of stages), so that every stage is the first one, with the whole budget, once every few
# runs, whatever the others cost on that machine: that stage MUST start (the run fails when the
# suite left it less than 5 minutes, since the suite has then outgrown the budget); the others
# follow as the budget allows, and one it leaves no time for, or cuts short (a cold build tree),
# is reported as NOT RUN / NOT FINISHED without failing. The trees build from ccache.
budget_min=${budget:-${TT_TEST_BUDGET_MIN:-$([[ ${CI:-} == true ]] && echo 38 || echo 0)}}
within_budget() {
  local must=$1 name=$2
  shift 2
  if [[ $budget_min == 0 ]]; then
    "$@"
    return
  fi
  local left=$((budget_min * 60 - (SECONDS - started)))
  if ((left < 300)); then
    if [[ $must == must ]]; then
      echo "test.sh: $name, this run's rotation stage, CANNOT START: $((left / 60)) min of the" \
        "${budget_min}-min budget left after the suite" >&2
      exit 1
    fi
    echo "test.sh: $name NOT RUN: $((left / 60)) min of the ${budget_min}-min budget left" >&2
    return
  fi
  local rc=0
  timeout --kill-after=30 "$left" "$@" || rc=$?
  if ((rc == 124 || rc == 137)); then
    echo "test.sh: $name NOT FINISHED: stopped at the ${budget_min}-min budget (cold build trees?" \
      "run it alone: scripts/test.sh $name)" >&2
  elif ((rc != 0)); then
    echo "test.sh: $name failed" >&2
    exit "$rc"
  fi
}
run_stage() {
  local must=$1
  case "$2" in
    shipping) within_budget "$must" "--shipping" "${shipping_tests[@]}" ${args[@]+"${args[@]}"} ;;
    address)
      within_budget "$must" "--sanitize address,undefined" "$root/scripts/test.sh" \
        --sanitize address,undefined ${args[@]+"${args[@]}"}
      ;;
    fuzz)
      if [[ $fuzz != 0 ]]; then
        within_budget "$must" "--fuzz $fuzz" "$root/scripts/fuzz.sh" "$fuzz"
      fi
      ;;
    thread)
      within_budget "$must" "--sanitize thread" "$root/scripts/test.sh" --sanitize thread \
        ${args[@]+"${args[@]}"}
      ;;
  esac
}
# --full: formatting first (seconds), then this run's rotation stage, then the others in the
# order of their cost (the cheap ones first, so that a short budget still runs most of them).
if [[ $full == 1 ]]; then
  within_budget may "format check" "$root/scripts/format-check.sh"
  stages=(fuzz thread shipping address)
  count=$(git -C "$root" rev-list --count HEAD 2>/dev/null || echo 0)
  first=$((count % ${#stages[@]}))
  echo "test.sh: this run's rotation stage: ${stages[$first]} (commit $count)"
  run_stage must "${stages[$first]}"
  for ((k = 0; k < ${#stages[@]}; ++k)); do
    if ((k != first)); then run_stage may "${stages[$k]}"; fi
  done
fi
cd "$root/build"
if [[ $gpu == 1 ]]; then
  out=$(./tests/compiler_test --gtest_filter='CudaDriver.*:CudaNvrtc.*' 2>&1) || {
    echo "$out"
    exit 1
  }
  echo "$out" | grep -E "^\[ *(OK|SKIPPED|FAILED) *\]|no GPU" || true
  if echo "$out" | grep -q "SKIPPED \]"; then
    echo "test.sh --gpu: the GPU tests skipped (reason above); this machine cannot run them" >&2
    exit 1
  fi
  if ! echo "$out" | grep -q "CudaDriver"; then
    echo "test.sh --gpu: this build has no CUDA support (no CUDA Toolkit found by CMake)" >&2
    exit 1
  fi
fi
