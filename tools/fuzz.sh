#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang into build-fuzz/ and runs
# each for SECONDS (default 60), two at a time (CI-sized 2-core machines),
# printing corpus size and exec/s. Not part of CI. Needs clang and
# libclang-rt-dev (Debian: apt-get install clang libclang-rt-dev libomp-dev).
# Crashes land in build-fuzz/artifacts/. Usage: tools/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build-fuzz"
secs="${1:-60}"; shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=($(sed -n 's/^ds_add_fuzzer(\([a-z0-9_]*\).*/\1/p' "$repo/tests/fuzz/CMakeLists.txt"))
fi
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DDYNSPARSE_FUZZ=ON \
  -DDYNSPARSE_CUDA=OFF -DDYNSPARSE_BENCHMARKS=OFF >&2
cmake --build "$build" --target "${targets[@]}" >&2
data="${DYNSPARSE_DATA:-}"
[[ -z "$data" && -d "$repo/../shared/data" ]] && data="$(cd "$repo/../shared/data" && pwd)"
# Seeds are regenerated each run; the corpus (what the fuzzer found) persists.
rm -rf "$build/seeds"
python3 "$repo/tools/fuzz_seeds.py" "$repo" "$build/seeds" "$data"
mkdir -p "$build/artifacts" "$build/logs"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

run_one() {
  local t="$1" extra=()
  case "$t" in
    encode_decode_fuzz) extra=(-max_len=4096) ;;
    tokenizer_json_fuzz|vocab_merges_fuzz) extra=(-max_len=65536) ;;
  esac
  mkdir -p "$build/corpus/$t" "$build/seeds/$t"
  "$build/tests/fuzz/$t" -max_total_time="$secs" -print_final_stats=1 -timeout=30 \
    -rss_limit_mb=4096 -artifact_prefix="$build/artifacts/$t-" "${extra[@]}" \
    "$build/corpus/$t" "$build/seeds/$t" >"$build/logs/$t.log" 2>&1 &&
    status=ok || status="FAILED (see $build/logs/$t.log)"
  local execs rate
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/logs/$t.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$build/logs/$t.log")
  printf '%-26s %4ss corpus=%-6s execs=%-9s exec/s=%-7s %s\n' "$t" "$secs" \
    "$(ls "$build/corpus/$t" | wc -l)" "${execs:-?}" "${rate:-?}" "$status"
  [[ "$status" == ok ]]
}

failed=0; running=0
for t in "${targets[@]}"; do
  run_one "$t" & running=$((running + 1))
  if ((running == 2)); then wait -n || failed=1; running=$((running - 1)); fi
done
while ((running > 0)); do wait -n || failed=1; running=$((running - 1)); done
exit "$failed"
