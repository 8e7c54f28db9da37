#!/usr/bin/env bash
# Run 76 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the token-path CUDA tests, then the host side of lazyllm's
# eager decode steps: each line of run76_trace.txt runs under the CUPTI
# recorder with DYNSPARSE_TRACE_API=1 ($OUT/api_trace.tgz: name.csv, name.log).
RUN_LIST=results/bench/run76_list.txt RUN_CTEST="-R TokenOps --timeout 200" \
  RUN_NCU=0 bash results/bench/device_run.sh
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tracer=build-cuda-gpu/cupti_trace/libdynsparse_cupti_trace.so
mkdir -p "$OUT/api_trace"
while IFS='|' read -r name args; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  # shellcheck disable=SC2086  # the arguments are a word list
  CUDA_INJECTION64_PATH="$PWD/$tracer" DYNSPARSE_TRACE_API=1 \
    DYNSPARSE_TRACE_OUT="$OUT/api_trace/$name.csv" DYNSPARSE_TRACE_LAST=4 \
    timeout 200 build-cuda-gpu/dynsparse-bench $args --json \
    >"$OUT/api_trace/$name.log" 2>&1
  echo "api trace $name: rc $?" >>"$OUT/run.log"
done <results/bench/run76_trace.txt
tar czf "$OUT/api_trace.tgz" -C "$OUT" api_trace && rm -rf "$OUT/api_trace"
