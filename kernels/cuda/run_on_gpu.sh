#!/usr/bin/env bash
# One command on a GPU machine, from the repository root:
#
#   bash kernels/cuda/run_on_gpu.sh
#
# 1. prints the machine (GPU, driver, nvcc, cmake, ninja, compiler);
# 2. checks the C++ dependencies and says what is missing;
# 3. configures + builds the CUDA slice in Release with ninja, for the GPU's
#    own architecture (sm_90a on an H200), and records the ptxas register /
#    spill report of the GEMV kernels;
# 4. runs `ctest -L cuda --output-on-failure` (kernels vs the CPU reference)
#    and the GEMV test's plan printout;
# 5. runs the kernel benchmarks, GEMV and attention (--benchmark_format=json,
#    --benchmark_out=$OUT/cuda_bench.json) and prints a short table: GB/s and
#    % of the device-to-device copy bandwidth measured in the same run.
# 6. with DS_CUDA_MODEL_BENCH=1, runs `dynsparse-bench` (experiments/bench) on
#    the model shapes of issue 5 (Llama-2-7B and OPT-6.7B decode, Llama-2-7B
#    prefill of 8192 tokens, OPT-30B and OPT-66B decode), random fp16 weights
#    generated on the GPU; one JSON object per line in $OUT/bench.jsonl;
# 7. with DS_CUDA_SANITIZE=1, runs compute-sanitizer memcheck on the
#    attention, CudaBackend, sparse-op and token-op tests ($OUT/memcheck.log);
#    DS_CUDA_RACECHECK=1 runs racecheck on them ($OUT/racecheck.log);
#    DS_CUDA_SANITIZE_TESTS / DS_CUDA_SANITIZE_TIMEOUT (s per test binary)
#    narrow them; DS_CUDA_SANITIZE_SHARDS=N runs N gtest shards of each
#    binary side by side, DS_CUDA_SANITIZE_ALL=1 every CudaBackend fixture.
# Files in $OUT (the device tool returns at most 8): build.log (configure +
# build), ptxas_gemv.txt, ctest.log (with the GEMV plan printout),
# cuda_bench.json + cuda_bench.log (kernel benchmarks), bench.jsonl + bench.log
# (model benchmark), memcheck.log, parity.log (the errors the CUDA backend
# and attention tests print).
# 8. with DS_CUDA_DEJAVU_BENCH=1 (issue 6), runs the sparse MLP kernel
#    benchmark ($OUT/sparse_mlp.jsonl: DejaVu MLP at keep 0.1/0.25 vs our
#    dense MLP on OPT/Llama shapes) and end-to-end decode of OPT-66B, dense vs
#    the bench-only `dejavu-timing` method (random rank-1000 predictors, MLP
#    keep 0.1 in the first 54 layers, head keep 0.5 after the first 5), one
#    JSON line each in $OUT/dejavu_bench.jsonl. DS_CUDA_DEJAVU_METHOD=dejavu
#    times the registry's `dejavu` method (predictors=random:1000) instead.
#    DS_CUDA_DEJAVU_E2E=0 skips the end-to-end runs, DS_CUDA_DEJAVU_MODELS
#    overrides the model list ("opt-66b:10" by default; model:N keeps the
#    last N MLP layers dense, e.g. "llama-2-7b:5").
# Quick knobs: DS_CUDA_SKIP_PTXAS=1 skips the register report (it recompiles
# gemv_kernels.cu), DS_CUDA_TARGETS="a b" builds only those ninja targets,
# DS_CUDA_CTEST_ARGS adds ctest arguments (e.g. "-E ModelSized"),
# DS_CUDA_SKIP_PLANS=1 skips the GEMV plan printout (it reruns a slow test).
#
# Needs: cmake >= 3.25, ninja, nvcc (13.0) with a host g++ (C++20), an NVIDIA
# driver, python3 (for the table), and the C++ libraries Abseil, Eigen 3.4,
# GoogleTest + gmock and Google Benchmark (benchmark is optional: without it
# only the tests run), plus OpenMP (libgomp, ships with g++).
# If those libraries are not installed on the GPU machine: on a Debian machine
# that has them, run `bash kernels/cuda/stage_deps.sh` (writes the git-ignored
# build_cuda_deps/) and carry that folder along; this script uses it when
# present (or DS_CUDA_DEPS=/path). Binaries built against it need
# LD_LIBRARY_PATH=build_cuda_deps/root/usr/lib/x86_64-linux-gnu when run by
# hand (Abseil's own libraries find each other only through it).
#
# By default it builds kernels/cuda/standalone (core/ + kernels/cpu +
# kernels/cuda + tests/cuda only: no yaml-cpp, nlohmann-json or ICU needed,
# and unaffected by other folders). DS_CUDA_FULL_BUILD=1 builds the whole
# repository instead. DS_CUDA_ARCHS overrides the CUDA architectures;
# DS_CUDA_SKIP_BENCH=1 stops after the tests; DS_CUDA_BENCH_FILTER=regex runs
# only the kernel benchmarks it matches.
#
# Exit status: 0 when the build and every test passed; 1 otherwise (the
# benchmark still runs after failing tests so one run says as much as it can).
set -uo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
source "$repo/kernels/cuda/bench_line.sh"
cd "$repo"
OUT="${OUT:-$repo/build_cuda_out}"
mkdir -p "$OUT"
build="${DS_CUDA_BUILD_DIR:-$repo/build-cuda-gpu}"
deps="${DS_CUDA_DEPS:-$repo/build_cuda_deps}"
status=0

section() { printf '\n==== %s ====\n' "$*"; }

section "machine"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.sm,clocks.mem \
    --format=csv 2>&1
else
  echo "nvidia-smi not found: no NVIDIA driver? (tests will skip)"
fi
for tool in nvcc cmake ninja g++ python3; do
  if command -v "$tool" >/dev/null 2>&1; then
    printf '%-8s %s\n' "$tool" "$("$tool" --version 2>&1 | grep -m1 -E '[0-9]+\.[0-9]+')"
  else
    printf '%-8s MISSING\n' "$tool"
  fi
done
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
  echo "using /usr/local/cuda/bin/nvcc"
fi
for tool in nvcc cmake ninja g++; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "FATAL: $tool is required to build (see the header of $0)"
    exit 1
  fi
done

section "dependencies"
cmake_args=()
inc_dirs=(/usr/include /usr/local/include /usr/include/eigen3)
if [[ -d "$deps/root/usr" ]]; then
  echo "using staged libraries in $deps ($(head -1 "$deps/MANIFEST" 2>/dev/null))"
  d="$deps/root/usr"
  cmake_args+=("-DCMAKE_PREFIX_PATH=$d"
               "-Dabsl_DIR=$d/lib/x86_64-linux-gnu/cmake/absl"
               "-DGTest_DIR=$d/lib/x86_64-linux-gnu/cmake/GTest"
               "-Dbenchmark_DIR=$d/lib/x86_64-linux-gnu/cmake/benchmark"
               "-DEigen3_DIR=$d/share/eigen3/cmake")
  export LD_LIBRARY_PATH="$d/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  inc_dirs=("$d/include" "$d/include/eigen3" "${inc_dirs[@]}")
fi
find_header() {
  local h
  for dir in "${inc_dirs[@]}"; do
    if [[ -f "$dir/$1" ]]; then echo "$dir"; return 0; fi
  done
  return 1
}
missing=()
have_benchmark=ON
for pair in "Abseil:absl/status/status.h" "Eigen:Eigen/Core" \
            "GoogleTest:gtest/gtest.h" "gmock:gmock/gmock.h" \
            "GoogleBenchmark:benchmark/benchmark.h"; do
  name="${pair%%:*}"
  header="${pair#*:}"
  if dir="$(find_header "$header")"; then
    printf '%-16s found (%s)\n' "$name" "$dir"
  else
    printf '%-16s MISSING (%s)\n' "$name" "$header"
    if [[ "$name" == GoogleBenchmark ]]; then
      have_benchmark=OFF
    else
      missing+=("$name")
    fi
  fi
done
if ((${#missing[@]})); then
  cat <<EOF
FATAL: missing C++ libraries: ${missing[*]}.
  Install them (Debian/Ubuntu: libabsl-dev libeigen3-dev libgtest-dev
  libgmock-dev libbenchmark-dev), or stage them on a machine that has them:
    bash kernels/cuda/stage_deps.sh      # writes build_cuda_deps/
  and carry build_cuda_deps/ here (or set DS_CUDA_DEPS=/path/to/it).
EOF
  exit 1
fi
[[ "$have_benchmark" == OFF ]] &&
  echo "WARNING: Google Benchmark missing: building tests only, no benchmark"

archs="${DS_CUDA_ARCHS:-}"
if [[ -z "$archs" ]]; then
  cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')"
  case "$cap" in
    90) archs="90a-real" ;;
    "") archs="80-real;90a-real" ;;
    *) archs="${cap}-real" ;;
  esac
fi
echo "CUDA architectures: $archs"

section "configure + build (Release, ninja) -> $build"
if [[ "${DS_CUDA_FULL_BUILD:-0}" == 1 ]]; then
  src="$repo"
  test_dir="$build"
  bench="$build/kernels/cuda/dynsparse_cuda_benchmarks"
  gemv_test="$build/tests/cuda/cuda_gemv_test"
else
  src="$repo/kernels/cuda/standalone"
  test_dir="$build"
  bench="$build/kernels_cuda/dynsparse_cuda_benchmarks"
  gemv_test="$build/tests_cuda/cuda_gemv_test"
fi
start=$SECONDS
if ! cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      "-DCMAKE_CUDA_ARCHITECTURES=$archs" "-DDYNSPARSE_BENCHMARKS=$have_benchmark" \
      "${cmake_args[@]}" >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"
  echo "FATAL: configure failed (full log: $OUT/build.log)"
  exit 1
fi
if ! ninja -C "$build" ${DS_CUDA_TARGETS:-} >>"$OUT/build.log" 2>&1; then
  grep -E -B2 -A6 'error|FAILED' "$OUT/build.log" | head -80
  echo "FATAL: build failed (full log: $OUT/build.log)"
  exit 1
fi
echo "built in $((SECONDS - start)) s"

section "ptxas report for gemv_kernels.cu"
[[ "${DS_CUDA_SKIP_PTXAS:-0}" == 1 ]] || {
  inc=(-I"$repo")
  for dir in "${inc_dirs[@]}"; do inc+=(-I"$dir"); done
  for a in ${archs//;/ }; do
    a="${a%-real}"
    nvcc -std=c++20 -O3 -lineinfo --expt-relaxed-constexpr "${inc[@]}" \
      "-gencode=arch=compute_$a,code=sm_$a" -Xptxas -v -c kernels/cuda/gemv_kernels.cu \
      -o "$OUT/gemv_sm$a.o" 2>&1 |
      awk -v arch="sm_$a" '
        /Compiling entry/ { match($0, /Gemv[A-Za-z]+Kernel(I[0-9]*[_a-z0-9]*Li[0-9])?/); k = substr($0, RSTART, RLENGTH) }
        /spill/ { s = $0; sub(/.*info *: */, "", s); sub(/^ */, "", s) }
        /Used/ { u = $0; sub(/.*info *: */, "", u); printf "%s %-34s %s | %s\n", arch, k, u, s }'
    rm -f "$OUT/gemv_sm$a.o"
  done
} >"$OUT/ptxas_gemv.txt" 2>&1
grep -E "Vector|SplitReduce" "$OUT/ptxas_gemv.txt" | head -20

section "ctest -L cuda"
start=$SECONDS
if ! (cd "$test_dir" && ctest -L cuda --output-on-failure -j4 --timeout 600 ${DS_CUDA_CTEST_ARGS:-}) \
    >"$OUT/ctest.log" 2>&1; then
  status=1
  grep -E -A40 'Failure|FAILED|Failed|Exception|Timeout' "$OUT/ctest.log" | head -150
fi
grep -E 'tests passed|tests failed|Skipped' "$OUT/ctest.log" | head -5
echo "tests took $((SECONDS - start)) s"
# The error figures the parity tests print (ctest keeps output only on
# failure): CUDA vs CPU logits per fixture and dtype, attention kernels.
tdir="$(dirname "$gemv_test")"
if [[ -x "$tdir/cuda_backend_test" ]]; then
  { "$tdir/cuda_backend_test" --gtest_filter='*LogitsMatchCpu*:*Greedy*' 2>&1 |
      grep -E 'max abs|OK|FAILED'
    "$tdir/cuda_attention_test" 2>&1 | grep -E 'err='; } >"$OUT/parity.log"
  grep -c 'max abs' "$OUT/parity.log" | sed 's/^/parity lines: /'
fi
[[ "${DS_CUDA_SKIP_PLANS:-0}" == 1 ]] ||
"$gemv_test" --gtest_filter='GemvTest.ModelSizedShapes:GemvTest.SmallOutSplitsKAcrossBlocks' \
  >"$OUT/gemv_plans.tmp" 2>&1 || true
grep -E ' err=| plan ' "$OUT/gemv_plans.tmp" | head -40
{ echo; echo "==== GEMV plans ===="; cat "$OUT/gemv_plans.tmp"; } >>"$OUT/ctest.log"
rm -f "$OUT/gemv_plans.tmp"

# compute-sanitizer over the kernel tests: memcheck with DS_CUDA_SANITIZE=1,
# racecheck (shared-memory hazards) with DS_CUDA_RACECHECK=1.
# DS_CUDA_SANITIZE_SHARDS=N splits each binary into N gtest shards run side by
# side (racecheck slows model-sized tests ~100x; shards share the GPU);
# DS_CUDA_SANITIZE_ALL=1 runs every CudaBackend fixture, not just two.
sanitize_one() {  # tool binary filter shard shards -> stdout
  local tool="$1" bin="$2" filter="$3" shard="$4" shards="$5"
  GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$shard" \
    timeout "${DS_CUDA_SANITIZE_TIMEOUT:-150}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
    "$bin" "--gtest_filter=$filter" 2>&1 | grep -v '^\[ *\(RUN\|OK\) *\]'
  echo "exit status ${PIPESTATUS[0]} (shard $shard of $shards)"
}
sanitize() {
  local tool="$1" shards="${DS_CUDA_SANITIZE_SHARDS:-1}"
  section "compute-sanitizer $tool (attention, CudaBackend, sparse, token ops)"
  start=$SECONDS
  local tests=(${DS_CUDA_SANITIZE_TESTS:-cuda_attention_test cuda_backend_test \
    cuda_sparse_ops_test cuda_token_ops_test})
  # Every shard of every binary at once; the logs are joined in order after.
  for t in "${tests[@]}"; do
    bin="$(dirname "$gemv_test")/$t"
    [[ -x "$bin" ]] || continue
    # Two fixtures (0: GQA Llama, 5: OPT with projections) keep it short.
    filter='*'
    [[ "$t" == cuda_backend_test && "${DS_CUDA_SANITIZE_ALL:-0}" != 1 ]] &&
      filter='*/0:*/5:*DeviceRandom*'
    echo "== $t ($filter, $shards shards)" >"$OUT/$tool.$t.head.tmp"
    for ((i = 0; i < shards; i++)); do
      sanitize_one "$tool" "$bin" "$filter" "$i" "$shards" >"$OUT/$tool.$t.$i.tmp" &
    done
  done
  wait
  for t in "${tests[@]}"; do
    if [[ -f "$OUT/$tool.$t.head.tmp" ]]; then
      cat "$OUT/$tool.$t.head.tmp"
      for ((i = 0; i < shards; i++)); do cat "$OUT/$tool.$t.$i.tmp"; done
    else
      echo "== $t: not built"
    fi
  done >"$OUT/$tool.log" 2>&1
  rm -f "$OUT/$tool".*.tmp
  grep -E '^==|ERROR SUMMARY|RACECHECK SUMMARY|exit status|PASSED|FAILED' \
    "$OUT/$tool.log"
  echo "$tool took $((SECONDS - start)) s"
}
[[ "${DS_CUDA_SANITIZE:-0}" == 1 ]] && sanitize memcheck
[[ "${DS_CUDA_RACECHECK:-0}" == 1 ]] && sanitize racecheck

if [[ "${DS_CUDA_MODEL_BENCH:-0}" == 1 ]]; then
  section "model benchmark (dynsparse-bench, random fp16 weights on the GPU)"
  start=$SECONDS
  mbench="$build/dynsparse-bench"
  [[ -x "$mbench" ]] || mbench="$build/experiments/bench/dynsparse-bench"
  : >"$OUT/bench.jsonl"
  # DS_CUDA_BENCH_LIST=file replaces the default list below (same format).
  list="$(cat <<'LIST'
--model random:llama-2-7b --device cuda --dtype f16 --prompt 128 --new 64 --repeats 3
--model random:opt-6.7b --device cuda --dtype f16 --prompt 128 --new 64 --repeats 3
--model random:llama-2-7b --device cuda --dtype f16 --prompt 128 --new 32 --repeats 2 --no-cuda-graphs
DYNSPARSE_CUDA_PDL=0 --model random:llama-2-7b --device cuda --dtype f16 --prompt 128 --new 32 --repeats 2 --seed 2
DYNSPARSE_CUDA_FUSE=0 --model random:llama-2-7b --device cuda --dtype f16 --prompt 128 --new 32 --repeats 2 --seed 3
--model random:llama-2-7b --device cuda --dtype f16 --prompt 128 --new 32 --repeats 2 --batch 8
--model random:llama-2-7b --device cuda --dtype f16 --prompt 2048 --new 4 --repeats 3
--model random:llama-2-7b --device cuda --dtype f16 --prompt 8192 --new 4 --repeats 2
--model random:opt-30b --device cuda --dtype f16 --prompt 128 --new 16 --repeats 2
--model random:opt-66b --device cuda --dtype f16 --prompt 128 --new 16 --repeats 2
LIST
)"
  [[ -n "${DS_CUDA_BENCH_LIST:-}" ]] && list="$(cat "$DS_CUDA_BENCH_LIST")"
  while read -r args; do
    [[ -z "$args" || "$args" == \#* ]] && continue
    echo "== dynsparse-bench $args" >>"$OUT/bench.log"
    split_bench_line "$args"  # Leading VAR=value words: the environment.
    if ! timeout 180 env "${bench_env[@]}" "$mbench" "${bench_args[@]}" \
        --json >>"$OUT/bench.jsonl" 2>>"$OUT/bench.log"; then
      echo "FAILED: $args" | tee -a "$OUT/bench.log"
      status=1
    fi
  done <<<"$list"
  python3 - "$OUT/bench.jsonl" <<'PY' | tee -a "$OUT/bench.log"
import json, sys
print(f"{'model':22s} {'b':>2s} {'prompt':>6s} {'ttft ms':>9s} {'TFLOP/s':>8s} "
      f"{'dec ms':>8s} {'p10':>7s} {'p90':>7s} {'floor':>7s} {'x floor':>7s} {'GB/s':>7s} "
      f"{'kv':>4s} method")
for line in open(sys.argv[1]):
    r = json.loads(line)
    graphs = "" if "CUDA graphs" in r["backend"] else " (eager)"
    graphs += "" if "PDL" in r["backend"] else " (no PDL)"
    graphs += " (unfused)" if "unfused" in r["backend"] else ""
    graphs += " (late loads)" if "late GEMV loads" in r["backend"] else ""
    graphs += " (old attn)" if "old prefill attention" in r["backend"] else ""
    graphs += " (flash " + r["backend"].split("flash ")[1][:3] + ")" if "flash " in r["backend"] else ""
    print(f"{r['model'][7:]+graphs:22s} {r['batch']:2d} {r['prompt']:6d} {r['ttft_ms']:9.2f} "
          f"{r['prefill_tflops']:8.1f} {r['decode_ms_median']:8.3f} {r['decode_ms_p10']:7.3f} "
          f"{r['decode_ms_p90']:7.3f} {r['floor_ms']:7.3f} {r['floor_ratio']:7.3f} "
          f"{r['achieved_gbps']:7.0f} {r.get('kv_dtype', '?'):>4s} {r['method']}")
PY
  echo "model benchmark took $((SECONDS - start)) s"
fi

if [[ "${DS_CUDA_DEJAVU_BENCH:-0}" == 1 ]]; then
  section "DejaVu sparse execution (issue 6)"
  start=$SECONDS
  sbench="$build/kernels_cuda/dynsparse_sparse_mlp_bench"
  [[ -x "$sbench" ]] || sbench="$build/kernels/cuda/dynsparse_sparse_mlp_bench"
  if ! timeout 240 "$sbench" >"$OUT/sparse_mlp.jsonl" 2>"$OUT/dejavu.log"; then
    echo "FAILED: sparse MLP benchmark" | tee -a "$OUT/dejavu.log"
    status=1
  fi
  python3 - "$OUT/sparse_mlp.jsonl" <<'PY' | tee -a "$OUT/dejavu.log"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("predictor"):
        print(f"predictor d={r['d']} units={r['units']} D={r['rank']}: gemvs {r['gemvs_ms']*1e3:.1f} us "
              f"({r['gemvs_pct_copy']:.0f}% copy), TopK k={r['k']} {r['topk_ms']*1e3:.1f} us")
        continue
    if r.get("down_of_all"):
        print(f"down over W2^T, all {r['inter']} units, {r['rows']} rows: {r['transposed_ms']*1e3:.1f} us "
              f"({r['transposed_pct_copy']:.0f}% copy), dense over W2 {r['dense_ms']*1e3:.1f} us "
              f"({r['dense_pct_copy']:.0f}% copy)")
        continue
    print(f"{r['shape']:11s} keep {r['keep']:.2f}: sparse {r['sparse_ms']*1e3:7.1f} us "
          f"{r['sparse_gbps']:6.0f} GB/s ({r['sparse_pct_copy']:4.1f}%), dense {r['dense_ms']*1e3:7.1f} us "
          f"({r['dense_pct_copy']:4.1f}%), speedup {r['speedup']:.2f}x of ideal {r['ideal_speedup']:.2f}x; "
          f"two gathers {r['unfused_ms']*1e3:.1f} us (up {r['up_ms']*1e3:.1f}, down {r['down_ms']*1e3:.1f} alone)")
PY
  if [[ "${DS_CUDA_DEJAVU_E2E:-1}" == 1 ]]; then
    mbench="$build/dynsparse-bench"
    [[ -x "$mbench" ]] || mbench="$build/experiments/bench/dynsparse-bench"
    # A full build (DS_CUDA_FULL_BUILD=1) has the same registry in its CLI.
    [[ -x "$build/dynsparse" ]] && [[ "${DS_CUDA_DEJAVU_METHOD:-}" == dejavu ]] &&
      mbench="$build/dynsparse bench"
    method="${DS_CUDA_DEJAVU_METHOD:-dejavu-timing}"
    : >"$OUT/dejavu_bench.jsonl"
    # model:N keeps the last N MLP layers dense (15% of the layers).
    for spec in ${DS_CUDA_DEJAVU_MODELS:-opt-66b:10}; do
      model="${spec%%:*}"
      last="${spec#*:}"
      [[ "$last" == "$spec" ]] && last=10
      dargs="--method $method --method-arg mlp_keep=0.1 --method-arg dense_last_mlp=$last"
      dargs+=" --method-arg head_keep=0.5 --method-arg dense_first_heads=5"
      dargs+=" --method-arg predictors=random:1000"
      common="--model random:$model --device cuda --dtype f16 --prompt 128 --new 64 --repeats 2"
      for extra in "" "$dargs"; do
        echo "== $mbench $common $extra" >>"$OUT/dejavu.log"
        # shellcheck disable=SC2086
        if ! timeout 300 $mbench $common $extra --json >>"$OUT/dejavu_bench.jsonl" \
            2>>"$OUT/dejavu.log"; then
          echo "FAILED: $model $extra" | tee -a "$OUT/dejavu.log"
          status=1
        fi
      done
    done
    python3 - "$OUT/dejavu_bench.jsonl" <<'PY' | tee -a "$OUT/dejavu.log"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:
    print(f"{r['model']:20s} {r.get('method', '?'):14s} decode {r['decode_ms_median']:8.3f} ms "
          f"(p10 {r['decode_ms_p10']:.3f}, p90 {r['decode_ms_p90']:.3f}), ttft {r['ttft_ms']:.1f} ms")
# Pairs by model and method, so a failed run does not shift the pairs.
for dense in (r for r in rows if r.get('method') == 'dense'):
    for sparse in (r for r in rows if r['model'] == dense['model'] and r.get('method') != 'dense'):
        print(f"{dense['model']}: speedup {dense['decode_ms_median'] / sparse['decode_ms_median']:.3f}x")
PY
  fi
  echo "DejaVu benchmarks took $((SECONDS - start)) s"
fi

if [[ "${DS_CUDA_SKIP_BENCH:-0}" == 1 ]]; then
  echo "DS_CUDA_SKIP_BENCH=1: benchmark skipped"
elif [[ "$have_benchmark" == ON && -x "$bench" ]]; then
  section "kernel benchmark"
  start=$SECONDS
  filter=()
  [[ -n "${DS_CUDA_BENCH_FILTER:-}" ]] &&
    filter=("--benchmark_filter=$DS_CUDA_BENCH_FILTER")
  if ! "$bench" --benchmark_format=json --benchmark_out="$OUT/cuda_bench.json" \
      "${filter[@]}" >/dev/null 2>"$OUT/cuda_bench.log"; then
    status=1
    tail -20 "$OUT/cuda_bench.log"
    echo "benchmark failed"
  fi
  head -5 "$OUT/cuda_bench.log"
  echo "benchmark took $((SECONDS - start)) s"
  if command -v python3 >/dev/null 2>&1 && [[ -s "$OUT/cuda_bench.json" ]]; then
    python3 - "$OUT/cuda_bench.json" <<'PY' | tee -a "$OUT/cuda_bench.log"
import json, sys
data = json.load(open(sys.argv[1]))
ctx = data.get("context", {})
print(f"device: {ctx.get('device', '?')}   copy bandwidth: {ctx.get('copy_GBps', '?')} GB/s")
print(f"{'benchmark':56s} {'us':>9s} {'GB/s':>8s} {'%copy':>6s}  plan")
for b in data.get("benchmarks", []):
    if b.get("error_occurred"):
        print(f"{b['name']:56s} ERROR {b.get('error_message', '')}")
        continue
    label = b.get("label", "").replace("resident_warps=", "res=")
    print(f"{b['name']:56s} {b.get('us', 0):9.2f} {b.get('GB/s', 0):8.1f} "
          f"{b.get('pct_copy', 0):6.1f}  {label}")
PY
  fi
fi

section "summary"
grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1
if [[ -n "${d:-}" ]]; then
  echo "to run a binary by hand: export LD_LIBRARY_PATH=$d/lib/x86_64-linux-gnu"
fi
echo "logs in $OUT; exit status $status"
exit "$status"
