#!/usr/bin/env bash
# Run 80 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the whole CUDA suite (the split partial writer shared by
# the two tensor-core attention kernels, Session's single q/k/v allocation
# path), cuBLAS at 16-64 rows in the kernel benchmarks, run80_list.txt, then
# each line of run80_trace.txt under the CUPTI recorder (kernels only) with
# tools/cupti_trace/kernel_time.py's table of its last 20 eager decode steps
# ($OUT/kernel_time.tgz: name.md, name.log).
RUN_LIST=results/bench/run80_list.txt RUN_NCU=0 \
  RUN_KERNEL_BENCH='copy_d2d|cublas_bf16x|gemv/f16/' \
  bash results/bench/device_run.sh
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tracer=build-cuda-gpu/cupti_trace/libdynsparse_cupti_trace.so
dir="$OUT/kernel_time"
mkdir -p "$dir"
while IFS='|' read -r name args; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  # shellcheck disable=SC2086  # the arguments are a word list
  CUDA_INJECTION64_PATH="$PWD/$tracer" DYNSPARSE_TRACE_OUT="$dir/$name.csv" \
    timeout 200 build-cuda-gpu/dynsparse-bench $args --json \
    >"$dir/$name.log" 2>&1
  echo "kernel trace $name: rc $?" >>"$OUT/run.log"
  # The CSV stays (for a rerun of the table) only when the table failed.
  python3 tools/cupti_trace/kernel_time.py "$dir/$name.csv" --steps 20 \
    --top 60 >"$dir/$name.md" 2>>"$dir/$name.log" && rm -f "$dir/$name.csv"
done <results/bench/run80_trace.txt
tar czf "$OUT/kernel_time.tgz" -C "$OUT" kernel_time && rm -rf "$dir"
