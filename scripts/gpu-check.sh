#!/usr/bin/env bash
# What a first run on a GPU machine must learn, in one command (at most 8 minutes on an H100):
#   scripts/gpu-check.sh [--only STEPS] [--budget SECONDS] BUNDLE OUTDIR
# BUNDLE is the folder scripts/gpu-bundle.sh made; OUTDIR gets summary.txt (one line per step:
# pass / fail / skipped, why, the figure) and check.log (every command and its output), plus
# the record DBs the tuning steps wrote. Every step runs under `timeout` and the check goes on
# past a failed one.
#
# --budget (default 470): the whole check's seconds; a command gets at most what is left, and
# steps that find none left say so. Steps (--only takes a comma-separated list of these names
# or their letters):
#   a env       nvidia-smi, OS, glibc, where libcuda/libnvrtc/libcudnn/libcublas are (the
#               Python environment's site-packages/nvidia/*/lib too), every bundled binary
#               resolving every library (the bundle's own from the bundle)
#   b gpus      tensortune --help and gpus; the GPU unit tests (CudaDriver, CudaNvrtc, GpuDevice)
#   c sanitize  one config of each GPU template through `op run` under compute-sanitizer
#               memcheck, racecheck and synccheck, against numpy references (the tensor-core
#               template at fp16, tf32 and bf16, its reference rounded as each, and at 3xtf32
#               against the unrounded reference), and the fused attention network
#               (attention.cuda, which `op run` has no form for) through its GpuDevice test
#   d tune      tune-op --target cuda-smXY on two ResNet-18 layers (32 xgb trials each), then
#               the same through a farm (tracker + device --gpus 0) with its worker killed
#               mid-job: every config recorded once, the worker replaced (`farm`: that alone)
#   g faults    a GPU server whose worker faults on purpose on the real GPU (cuda-fault@3: an
#               illegal address, the context lost; cuda-hang@6: a kernel that never ends) while
#               a client tunes 10 configs of a dense layer in order: two errors, the worker
#               replaced twice, every other config measured
#   e networks  resnet-18 and mobilenet-v1 compiled for the GPU with those records, run on it,
#               against the interpreter on the CPU
#   f bench     gpu_bench (3 conv layers, 2 dense shapes, 2 attention batch matmuls, vs cuDNN /
#               cuBLAS; fused attention at 128 and 197 tokens against cuBLAS + cuDNN's softmax +
#               cuBLAS; the tensor-core templates at fp16 and tf32 against cuDNN / cuBLAS at
#               the same precision; then 4 MobileNet-v2 depthwise layers vs cuDNN) and ResNet-18
#               end to end against PyTorch at batch 1
# Without a GPU (a dry run, e.g. here or in ctest) the steps that need none still run: the
# bundle's completeness, --help, `op run --emulate` and emulated networks from the unpacked
# bundle; the rest say "skipped" and why. Exit status: 1 if any step failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
only=
budget=470
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) only=",$2,"; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    -h | --help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu-check: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [[ $# -ne 2 ]]; then
  echo "usage: scripts/gpu-check.sh [--only STEPS] [--budget SECONDS] BUNDLE OUTDIR (see --help)" >&2
  exit 2
fi
bundle=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
log=$out/check.log
summary=$out/summary.txt
: > "$log"
: > "$summary"
started=$SECONDS
deadline=$((SECONDS + budget))
failed=0

note() { echo "$*" >> "$log"; }
# result STEP STATUS DETAIL: one summary line (and the log's copy of it).
result() {
  local line
  line=$(printf '%-24s %-7s %s' "$1" "$2" "$3")
  echo "$line" | tee -a "$summary"
  note "--> $line"
  [[ $2 == fail ]] && failed=1
  return 0
}
# run LIMIT CMD...: runs under timeout, output to the log and to $last; returns the status.
last=$(mktemp)
run() {
  local limit=$1 left=$((deadline - SECONDS))
  shift
  if ((left < 5)); then
    echo "(not run: the check's ${budget}-s budget is spent)" | tee "$last" >> "$log"
    return 124
  fi
  ((limit > left)) && limit=$left
  note "\$ $*"
  timeout -k 5 "$limit" "$@" > "$last" 2>&1
  local rc=$?
  cat "$last" >> "$log"
  [[ $rc == 124 || $rc == 137 ]] && echo "(timed out after $limit s)" | tee -a "$last" >> "$log"
  return $rc
}
# start_tracker DIR DB: a tracker on a free port, its log in DIR; sets tracker_pid and port.
start_tracker() {
  mkdir -p "$1"
  "$tt" tracker --port 0 --port-file "$1/port" --db "$2" > "$1/tracker.log" 2>&1 &
  tracker_pid=$!
  for _ in $(seq 100); do [[ -s $1/port ]] && break; sleep 0.1; done
  port=$(cat "$1/port" 2> /dev/null)
}
wanted() { [[ -z $only || $only == *",$1,"* || $only == *",$2,"* ]]; }
tail_of() { grep -v '^\s*$' "$last" | tail -1 | cut -c1-160; }

# ---- the bundle, unpacked ----------------------------------------------------------------
work=$(mktemp -d /tmp/tt-gpu-check.XXXXXX)
trap 'pkill -P $$ 2>/dev/null; rm -rf "$work" "$last"' EXIT
if ! tar -C "$work" -xJf "$bundle/tensortune-gpu.tar.xz" 2>> "$log"; then
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$bundle/tensortune-gpu.tar.xz" "$work" 2>> "$log" ||
    { result unpack fail "cannot unpack $bundle/tensortune-gpu.tar.xz"; exit 1; }
fi
bin=$work/bin
lib=$work/lib
tt=$bin/tensortune
# PyTorch brings its own cuDNN and refuses another: it runs with the caller's search path.
caller_ld_path=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
note "bundle: $(head -3 "$work/MANIFEST" | tr '\n' ' ')"

# A Python with numpy (the GPU machine's python3 is PyTorch's; Debian's is /usr/bin/python3).
py=
for p in python3 /usr/bin/python3; do
  if command -v "$p" > /dev/null && "$p" -c 'import numpy' 2> /dev/null; then py=$p; break; fi
done
tools=$root/scripts/gpu/check_tools.py

# CUDA's libraries: where the toolkit, the distribution or a Python environment keeps them.
cuda_dirs=()
for d in ${TT_CUDA_LIBRARY_PATH:+${TT_CUDA_LIBRARY_PATH//:/ }} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu /usr/local/nvidia/lib64 /usr/lib64; do
  [[ -d $d ]] && cuda_dirs+=("$d")
done
for p in python3 /usr/bin/python3; do
  command -v "$p" > /dev/null || continue
  while read -r d; do [[ -d $d ]] && cuda_dirs+=("$d"); done < <("$p" - 2> /dev/null << 'EOF'
import glob, site
roots = site.getsitepackages() + [site.getusersitepackages()]
for r in roots:
    for d in sorted(glob.glob(r + "/nvidia/*/lib")) + sorted(glob.glob(r + "/torch/lib")):
        print(d)
EOF
  )
done
find_lib() { # NAME-GLOB: the first match in cuda_dirs, or ldconfig's
  local d f
  for d in "${cuda_dirs[@]}"; do
    for f in "$d"/$1; do [[ -e $f ]] && { echo "$f"; return 0; }; done
  done
  ldconfig -p 2> /dev/null | awk -v n="$1" '$1 ~ n { print $NF; exit }' | grep . && return 0
  return 1
}
# The anchors' libraries join the search path after the bundle's (never replacing it).
for name in 'libcudnn.so.9' 'libcublas.so.1[0-9]' 'libcudart.so.1[0-9]'; do
  if f=$(find_lib "$name"); then
    d=$(dirname "$f")
    [[ :$LD_LIBRARY_PATH: == *":$d:"* ]] || LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
  fi
done
export LD_LIBRARY_PATH

gpu=0
cc=80
gpu_reason="no GPU"
if $tt gpus > "$last" 2>&1 && grep -q 'cuda-sm' "$last"; then
  gpu=1
  cc=$(grep -o 'cuda-sm[0-9]*' "$last" | head -1 | sed 's/cuda-sm//')
else
  gpu_reason=$(grep -i 'no GPU' "$last" | head -1 | sed 's/ *(.*//' | cut -c1-80)
  gpu_reason=${gpu_reason:-no GPU}
fi
target=cuda-sm$cc
note "GPU: $gpu ($target) $gpu_reason"

# ---- a: environment ------------------------------------------------------------------------
if wanted a env; then
  {
    echo "=== environment"
    nvidia-smi 2>&1 || echo "nvidia-smi: not here"
    grep PRETTY_NAME /etc/os-release
    ldd --version | head -1
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    echo "library folders searched: ${cuda_dirs[*]}"
  } >> "$log" 2>&1
  found=
  for name in libcuda.so.1 'libnvrtc.so*' 'libcudnn.so.9' 'libcublas.so.1[0-9]'; do
    f=$(find_lib "$name") || f="missing"
    note "$name: $f"
    found+="${name%%.so*}=${f} "
  done
  result env/libraries pass "$(uname -r), $(ldd --version | head -1 | grep -o '[0-9.]*$'): $found"
  # Every library a bundled binary loads comes from the bundle unless the machine provides it
  # (glibc, libstdc++, libgcc, CUDA's); none is missing.
  missing= outside=
  for b in "$bin"/*; do
    while read -r name arrow path _; do
      [[ $arrow == "=>" ]] || continue
      if [[ $path == not ]]; then
        [[ $name =~ ^lib(cuda|cudart|cublas|cublasLt|cudnn) && $gpu == 0 ]] && continue
        missing+="$(basename "$b"):$name "
      elif [[ ! $name =~ ^(linux-vdso|ld-linux|libc\.so|libm\.so|libmvec|libpthread|libdl\.so|librt\.so|libresolv|libutil\.so|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcudnn|libnvrtc|libnvJitLink) &&
        $path != "$lib"/* ]]; then
        outside+="$(basename "$b"):$name "
      fi
    done < <(ldd "$b" 2>&1)
  done
  if [[ -n $missing || -n $outside ]]; then
    result env/bundle fail "unresolved: ${missing:-none}; from outside the bundle: ${outside:-none}"
  else
    result env/bundle pass "$(ls "$bin" | wc -l) binaries resolve all their libraries ($(ls "$lib" | wc -l) from the bundle)"
  fi
fi

# ---- b: gpus and the GPU unit tests ----------------------------------------------------------
gtest_step() { # NAME BINARY FILTER LIMIT
  if run "$4" "$bin/$2" --gtest_filter="$3" --gtest_brief=1; then
    local skipped
    skipped=$(grep -c '^\[  SKIPPED \]' "$last")
    if [[ $gpu == 0 || $skipped -gt 0 ]]; then
      result "$1" skipped "$skipped skipped: $(grep -m1 -A1 'Skipped' "$last" | tail -1 | sed 's/ *(.*//' | cut -c1-100)"
    else
      result "$1" pass "$(grep -o '[0-9]* tests\? from .* ran' "$last" | tail -1)"
    fi
  else
    result "$1" fail "$(grep -m2 'FAILED\|Failure\|error' "$last" | tr '\n' ' ' | cut -c1-150)"
  fi
}
if wanted b gpus; then
  if run 20 "$tt" --help && grep -q Subcommands "$last"; then
    result gpus/help pass "tensortune --help from the bundle"
  else
    result gpus/help fail "$(tail_of)"
  fi
  if run 30 "$tt" gpus; then
    if [[ $gpu == 1 ]]; then
      result gpus/list pass "$(grep 'cuda-sm' "$last" | head -1 | tr -s ' ')"
    else
      result gpus/list skipped "$gpu_reason ($(grep NVRTC "$last"))"
    fi
  else
    result gpus/list fail "$(tail_of)"
  fi
  gtest_step gpus/compiler_test compiler_test 'CudaDriver.*:CudaNvrtc.*' 120
  gtest_step gpus/backend_test backend_test 'GpuDevice.*' 120
fi

# ---- c: compute-sanitizer on each GPU template ----------------------------------------------
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2> /dev/null)
if wanted c sanitize; then
  cases=(
    "conv2d_nchw|conv2d|--data 1x64x14x14 --kernel 128x64x3x3 --pads 1|--pads 1,1,1,1"
    "conv2d_NCHWc|conv2d|--data 1x64x14x14 --kernel 128x64x3x3 --pads 1|--pads 1,1,1,1"
    "conv2d_nchw_winograd|conv2d|--data 1x64x14x14 --kernel 128x64x3x3 --pads 1|--pads 1,1,1,1"
    "depthwise_conv2d_nchw|conv2d|--data 1x96x28x28 --kernel 96x1x3x3 --strides 2,2 --pads 1|--strides 2,2 --pads 1,1,1,1"
    "dense_small_batch|dense|--data 4x512 --weight 1000x512|"
    "dense_large_batch|dense|--data 64x256 --weight 128x256|"
    "batch_matmul|batch_matmul|--data 12x128x64 --weight 12x96x64|"
    "dense_tensorcore|dense|--data 64x256 --weight 128x256|--precision fp16"
    "dense_tensorcore|dense|--data 37x264 --weight 45x264|--precision tf32"
    "dense_tensorcore|dense|--data 64x256 --weight 96x256|--precision bf16"
    "dense_tensorcore|dense|--data 37x264 --weight 45x264|--precision 3xtf32"
    "batch_matmul_tensorcore|batch_matmul|--data 12x128x64 --weight 12x96x64|--precision fp16"
    "conv2d_nchw_tensorcore|conv2d|--data 1x64x14x14 --kernel 128x64x3x3 --pads 1|--pads 1,1,1,1 --precision tf32"
  )
  for c in "${cases[@]}"; do
    IFS='|' read -r op kind shape oppads <<< "$c"
    precision=$(sed -n 's/.*--precision \([a-z0-9]*\).*/\1/p' <<< "$oppads")
    name=$op${precision:+_$precision}
    dir=$work/op_$name
    mkdir -p "$dir"
    if [[ -z $py ]]; then
      result "sanitize/$name" skipped "no python3 with numpy for the reference"
      continue
    fi
    # shellcheck disable=SC2086
    run 60 "$py" "$tools" inputs "$dir" --op "$kind" $shape ${precision:+--precision $precision} ||
      { result "sanitize/$name" fail "inputs: $(tail_of)"; continue; }
    args=(op run --op "$op" --target "$target" --data "$dir/data.npy" --weight "$dir/weight.npy"
      --bias "$dir/bias.npy" --relu --out "$dir/out.npy")
    # shellcheck disable=SC2206
    [[ -n $oppads ]] && args+=($oppads)
    if [[ $gpu == 0 ]]; then
      if run 120 "$tt" "${args[@]}" --emulate && run 30 "$py" "$tools" compare "$dir/out.npy" "$dir/ref.npy"; then
        result "sanitize/$name" skipped "$gpu_reason; emulated: $(tail_of)"
      else
        result "sanitize/$name" fail "emulated: $(tail_of)"
      fi
      continue
    fi
    for tool in memcheck racecheck synccheck; do
      if [[ -z $sanitizer ]]; then
        result "sanitize/$name/$tool" skipped "no compute-sanitizer on this machine"
        continue
      fi
      rm -f "$dir/out.npy"
      if run 90 "$sanitizer" --tool "$tool" --error-exitcode 9 "$tt" "${args[@]}"; then
        errors=$(grep -o 'ERROR SUMMARY: [0-9]* error[s]*\|RACECHECK SUMMARY: [0-9]* hazard[s]*' "$last" | tail -1)
        if run 30 "$py" "$tools" compare "$dir/out.npy" "$dir/ref.npy"; then
          result "sanitize/$name/$tool" pass "${errors:-no errors}; $(tail_of)"
        else
          result "sanitize/$name/$tool" fail "${errors:-no errors}; wrong output: $(tail_of)"
        fi
      else
        result "sanitize/$name/$tool" fail "$(grep -m3 'Invalid\|Error\|error\|hazard' "$last" | tr '\n' ' ' | cut -c1-200)"
      fi
    done
  done
fi

# attention.cuda reads q, k, v and a mask (no `op run` form): the fused attention network of
# GpuDevice.AttentionRunsOnTheGpuAndMatchesTheInterpreter (BERT's 128 tokens, ViT's 197) under
# each tool; the test itself compares with the interpreter.
if wanted c sanitize; then
  for tool in memcheck racecheck synccheck; do
    if [[ $gpu == 0 ]]; then
      result "sanitize/attention/$tool" skipped "$gpu_reason"
    elif [[ -z $sanitizer ]]; then
      result "sanitize/attention/$tool" skipped "no compute-sanitizer on this machine"
    elif run 180 "$sanitizer" --tool "$tool" --error-exitcode 9 "$bin/backend_test" \
      --gtest_filter=GpuDevice.AttentionRunsOnTheGpuAndMatchesTheInterpreter --gtest_brief=1; then
      errors=$(grep -o 'ERROR SUMMARY: [0-9]* error[s]*\|RACECHECK SUMMARY: [0-9]* hazard[s]*' "$last" | tail -1)
      result "sanitize/attention/$tool" pass "${errors:-no errors}; equal to the interpreter"
    else
      result "sanitize/attention/$tool" fail "$(grep -m3 'Invalid\|Error\|error\|hazard\|Failure' "$last" | tr '\n' ' ' | cut -c1-200)"
    fi
  done
fi

# ---- d: tuning on the GPU, locally and through a farm -----------------------------------------
tune_db=$out/gpu_tune.db
# The tracker's archive lives in the work folder (with its WAL and lock files) and is copied
# out whole once the tracker has stopped: few files come back from a GPU machine.
farm_db=$work/gpu_farm.db
layers=(
  "--data 1x64x56x56 --kernel 64x64x3x3 --pads 1,1,1,1"
  "--data 1x128x28x28 --kernel 128x128x3x3 --pads 1,1,1,1"
)
if wanted d tune || wanted farm farm; then
  if [[ $gpu == 0 ]]; then
    result tune/local skipped "$gpu_reason"
    result tune/farm skipped "$gpu_reason"
  else
    wanted d tune && rm -f "$tune_db"*
    for l in "${layers[@]}"; do
      wanted d tune || break
      # shellcheck disable=SC2086
      if run 120 "$tt" tune-op --op conv2d_nchw --target "$target" --gpu 0 $l --tuner xgb \
        --trials 32 --min-repeat-ms 20 --db "$tune_db"; then
        result "tune/local ${l:7:11}" pass "$(grep -i 'best' "$last" | tail -1 | cut -c1-150)"
      else
        result "tune/local ${l:7:11}" fail "$(tail_of)"
      fi
    done
    # The farm: a tracker, a GPU device server, a client; the worker killed mid-job.
    rm -f "$farm_db"*
    fdir=$work/farm
    start_tracker "$fdir" "$farm_db"
    "$tt" device --tracker "127.0.0.1:$port" --gpus 0 > "$fdir/device.log" 2>&1 &
    device_pid=$!
    (# the crash: once a few results are archived, SIGKILL the measuring worker
      for _ in $(seq 600); do
        n=$("$py" "$tools" count "$farm_db" 2> /dev/null || echo 0)
        if [[ ${n:-0} -ge 6 ]]; then
          # The server starts its workers through /proc/self/exe: match the subcommand.
          if pkill -KILL -f 'device-worker --device-key'; then
            echo "killed the worker after $n results"
          else
            echo "found no worker process to kill after $n results"
          fi
          break
        fi
        sleep 0.2
      done
    ) > "$fdir/killer.log" 2>&1 &
    killer_pid=$!
    # shellcheck disable=SC2086
    run 180 "$tt" tune-op --op conv2d_nchw --target "$target" ${layers[0]} --tuner xgb --trials 32 \
      --min-repeat-ms 20 --tracker "127.0.0.1:$port" --db "$work/farm_client.db"
    client_rc=$?
    # Built on this machine's cores, timed by the server: what the build took, the kernel cache,
    # and the share of the measuring time the GPU spent timing kernels.
    built=$(grep -E 'kernels built (here|by)|timing: kernels ran' "$last" | sed 's/.*\] //' | tr '\n' ' ' | cut -c1-300)
    run 10 "$tt" status --tracker "127.0.0.1:$port"
    kill "$killer_pid" 2> /dev/null
    sleep 1
    kill "$device_pid" "$tracker_pid" 2> /dev/null
    wait "$device_pid" "$tracker_pid" 2> /dev/null
    for f in killer tracker device; do note "--- farm $f log"; cat "$fdir/$f.log" >> "$log"; done
    killed=$(cat "$fdir/killer.log")
    replaced=$(grep -c 'starting a new worker' "$fdir/device.log")
    if [[ $client_rc == 0 ]] && run 30 "$py" "$tools" records "$farm_db" --at-least 32 &&
      [[ $killed == killed* && $replaced -ge 1 ]]; then
      result tune/farm pass "$killed; worker replaced $replaced time(s); $built"
    else
      run 30 "$py" "$tools" records "$farm_db"
      result tune/farm fail "client rc $client_rc; ${killed:-worker not killed}; replaced $replaced; $(tail_of)"
    fi
    "$py" - "$farm_db" "$out/gpu_farm.db" 2>> "$log" << 'EOF'
import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.execute("PRAGMA journal_mode=DELETE")  # one file to bring back
dst.close()
src.close()
EOF
  fi
fi

# ---- g: real faults on the GPU, on purpose -------------------------------------------------
if wanted g faults; then
  if [[ $gpu == 0 ]]; then
    result faults skipped "$gpu_reason"
  else
    fdir=$work/faults
    start_tracker "$fdir" "$fdir/tracker.db"
    "$tt" device --tracker "127.0.0.1:$port" --gpus 0 --worker-grace 5 \
      --fault-inject cuda-fault@3,cuda-hang@6 > "$fdir/device.log" 2>&1 &
    device_pid=$!
    run 150 "$tt" tune-op --op dense --data 1x512 --weight 1000x512 --target "$target" \
      --tuner grid --trials 10 --timeout 5 --min-repeat-ms 10 --tracker "127.0.0.1:$port" \
      --db "$fdir/client.db"
    client_rc=$?
    errors=$(grep -E 'measured [0-9]+ configs' "$last" | tail -1 | cut -c1-160)
    kill "$device_pid" "$tracker_pid" 2> /dev/null
    wait "$device_pid" "$tracker_pid" 2> /dev/null
    for f in tracker device; do note "--- faults $f log"; cat "$fdir/$f.log" >> "$log"; done
    replaced=$(grep -c 'starting a new worker' "$fdir/device.log")
    if [[ $client_rc == 0 && $errors == *", 2 errors"* && $replaced -ge 2 ]]; then
      result faults pass "worker replaced $replaced times; $errors"
    else
      result faults fail "client rc $client_rc; replaced $replaced; ${errors:-$(tail_of)}"
    fi
  fi
fi

# ---- e: networks compiled for the GPU --------------------------------------------------------
if wanted e networks; then
  for model in resnet-18 mobilenet-v1; do
    art=$work/$model.tt
    records=()
    [[ -f $tune_db ]] && records=(--records "$tune_db")
    if ! run 180 "$tt" compile --model "$model" --target "$target" "${records[@]}" -o "$art"; then
      result "networks/$model" fail "compile: $(tail_of)"
      continue
    fi
    kernels=$(grep -i 'kernels' "$last" | tail -1 | cut -c1-80)
    if [[ $gpu == 1 ]]; then
      run 120 "$tt" run "$art" --input data=random -o "$work/$model.gpu.npy"
    else
      run 240 "$tt" run "$art" --emulate --threads "$(nproc)" --input data=random -o "$work/$model.gpu.npy"
    fi || { result "networks/$model" fail "run: $(tail_of)"; continue; }
    run 180 "$tt" run --model "$model" --reference --input data=random -o "$work/$model.ref.npy" ||
      { result "networks/$model" fail "interpreter: $(tail_of)"; continue; }
    if [[ -z $py ]]; then
      result "networks/$model" skipped "no python3 with numpy to compare"
    elif run 30 "$py" "$tools" compare "$work/$model.gpu.npy" "$work/$model.ref.npy" --rtol 1e-4; then
      if [[ $gpu == 1 ]]; then
        result "networks/$model" pass "$target; $kernels; $(tail_of)"
      else
        result "networks/$model" skipped "$gpu_reason; emulated for $target: $(tail_of)"
      fi
    else
      result "networks/$model" fail "$(tail_of)"
    fi
  done
fi

# ---- f: benchmarks against cuDNN, cuBLAS and PyTorch ---------------------------------------
if wanted f bench; then
  if [[ $gpu == 0 ]]; then
    run 30 "$bin/gpu_bench" --help > /dev/null
    result bench/layers skipped "$gpu_reason (gpu_bench --help: rc $?)"
    result bench/depthwise skipped "$gpu_reason"
    result bench/tensorcore skipped "$gpu_reason"
    result bench/resnet-18 skipped "$gpu_reason"
  else
    if run 270 "$bin/gpu_bench" --trials 24 --max-convs 3 --db "$out/gpu_bench.db" \
      --no-end-to-end; then
      result bench/layers pass "$(grep -i 'geomean' "$last" | tail -1)"
      grep -E '^(conv|dense|bmm|attention|layer)' "$last" | sed 's/^/    /' | tee -a "$summary" > /dev/null
    else
      result bench/layers fail "$(tail_of)"
    fi
    # The tensor cores: two convolutions, the dense shapes and the attention at fp16 and tf32
    # against cuDNN / cuBLAS at the same precision.
    for precision in fp16 tf32; do
      if run 180 "$bin/gpu_bench" --trials 24 --max-convs 2 --precision "$precision" \
        --db "$out/gpu_bench.db" --no-end-to-end; then
        result "bench/tensorcore-$precision" pass "$(grep -i 'geomean' "$last" | tail -1)"
        grep -E '^(conv|dense|bmm|layer)' "$last" | sed "s/^/    $precision /" | tee -a "$summary" > /dev/null
      else
        result "bench/tensorcore-$precision" fail "$(tail_of)"
      fi
    done
    if run 150 "$bin/gpu_bench" --trials 24 --only 'dw ' --db "$out/gpu_bench.db" --no-end-to-end; then
      result bench/depthwise pass "$(grep -i 'geomean' "$last" | tail -1)"
      grep -E '^(dw|layer)' "$last" | sed 's/^/    /' | tee -a "$summary" > /dev/null
    else
      result bench/depthwise fail "$(tail_of)"
    fi
    art=$work/r18_bench.tt
    records=()
    [[ -f $out/gpu_bench.db ]] && records=(--records "$out/gpu_bench.db")
    ours=
    if run 120 "$tt" compile --model resnet-18 --target "$target" "${records[@]}" -o "$art" &&
      run 120 "$tt" bench "$art" --repeat 30 --json; then
      ours=$(grep -o '"median_ms": *[0-9.e+-]*' "$last" | head -1 | grep -o '[0-9.e+-]*$')
    fi
    theirs=
    if run 120 env LD_LIBRARY_PATH="$caller_ld_path" python3 "$tools" torch-resnet18 --repeat 50; then
      theirs=$(grep -o 'median_ms [0-9.]*' "$last" | grep -o '[0-9.]*$')
    fi
    if [[ -n $ours && -n $theirs ]]; then
      result bench/resnet-18 pass "ours $ours ms, PyTorch $theirs ms: ratio $(awk -v a="$theirs" -v b="$ours" 'BEGIN { printf "%.3f", a / b }') (> 1: ours is faster)"
    else
      result bench/resnet-18 fail "ours '${ours}' ms, PyTorch '${theirs}' ms: $(tail_of)"
    fi
  fi
fi

echo "gpu-check: $((SECONDS - started)) s; summary in $summary, log in $log" | tee -a "$summary"
exit $failed
