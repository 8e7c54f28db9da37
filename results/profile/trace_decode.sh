#!/usr/bin/env bash
# Kernel timelines of decode steps inside their CUDA graphs, on the GPU
# machine, after run_on_gpu.sh built build-cuda-gpu/ (with
# tools/cupti_trace): each line "name|dynsparse-bench arguments" (leading
# VAR=value words set the environment) of
# $TRACE_LIST runs once under the CUPTI recorder (CUDA_INJECTION64_PATH),
# keeping the last 4 graph launches, and tools/cupti_trace/step_table.py
# writes the median step's kernel table. Output: $OUT/trace.tgz
# (name.csv, name.md, name.log for each line).
set -uo pipefail
source results/profile/cupti_tracer.sh trace_decode
source kernels/cuda/bench_line.sh
dir="$OUT/trace"
mkdir -p "$dir"
while IFS='|' read -r name args; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  start=$SECONDS
  split_bench_line "$args"  # Leading VAR=value words: the environment.
  env "${bench_env[@]}" CUDA_INJECTION64_PATH="$PWD/$tracer" \
    DYNSPARSE_TRACE_OUT="$dir/$name.csv" DYNSPARSE_TRACE_LAST=4 \
    timeout 300 "$build/dynsparse-bench" "${bench_args[@]}" \
    --json >"$dir/$name.log" 2>&1
  rc=$?
  python3 tools/cupti_trace/step_table.py "$dir/$name.csv" --skip 1 \
    --all-rows >"$dir/$name.md" 2>>"$dir/$name.log"
  echo "trace $name: rc $rc, $((SECONDS - start)) s, $(head -1 "$dir/$name.md")"
done <"$TRACE_LIST"
tar czf "$OUT/trace.tgz" -C "$OUT" trace && rm -rf "$dir"
