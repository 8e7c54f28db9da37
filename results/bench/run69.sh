#!/usr/bin/env bash
# Run 69 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the decode stack tests, run69_list.txt (the stack against
# the layer kernels), then tools/decode_stack_trace on Llama-2-7B (prompt
# 128 and 4096) and OPT-6.7B into $OUT/stack_trace.md, after the head merge
# loads in batches and the grid barrier's reset rides on its release.
RUN_LIST=results/bench/run69_list.txt \
  RUN_CTEST="-R DecodeStack|CudaBackendTest --timeout 200" RUN_NCU=0 \
  bash results/bench/device_run.sh
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tracer=build-cuda-gpu/decode_stack_trace/dynsparse_decode_stack_trace
for run in "llama-2-7b 128" "opt-6.7b 128" "llama-2-7b 4096"; do
  set -- $run
  timeout 120 "$tracer" --model "$1" --prompt "$2" --steps 20 \
    >>"$OUT/stack_trace.md" 2>&1
  echo "decode_stack_trace $1 $2: exit $?" >>"$OUT/run.log"
  echo >>"$OUT/stack_trace.md"
done
