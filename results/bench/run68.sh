#!/usr/bin/env bash
# Run 68 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the decode stack and backend tests, run68_list.txt (the
# stack against the layer kernels), then tools/decode_stack_trace: the
# persistent kernel's per-phase timeline on Llama-2-7B and OPT-6.7B shapes.
RUN_LIST=results/bench/run68_list.txt \
  RUN_CTEST="-R DecodeStack|CudaBackendTest --timeout 200" RUN_NCU=0 \
  bash results/bench/device_run.sh
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tracer=build-cuda-gpu/decode_stack_trace/dynsparse_decode_stack_trace
for run in "llama-2-7b 128" "opt-6.7b 128" "llama-2-7b 4096"; do
  set -- $run
  timeout 120 "$tracer" --model "$1" --prompt "$2" --steps 20 \
    >"$OUT/stack_trace_$1_$2.md" 2>&1
  echo "decode_stack_trace $1 $2: exit $?" >>"$OUT/run.log"
done
