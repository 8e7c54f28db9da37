#!/usr/bin/env bash
# Isolated kernel durations of Llama-2-7B decode steps (results/profile's
# ncu_step.sh, decode only): run from the repository root on the GPU machine
# after kernels/cuda/run_on_gpu.sh built dynsparse-bench. Writes
# $OUT/ncu_decode.csv.
set -uo pipefail
bench=build-cuda-gpu/dynsparse-bench
deps="${DS_CUDA_DEPS:-$PWD/build_cuda_deps}"
export LD_LIBRARY_PATH="$deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
start=$SECONDS
timeout "${NCU_TIMEOUT:-100}" ncu --clock-control none \
  --metrics gpu__time_duration.sum --launch-count 2000 --csv --page raw \
  "$bench" --model random:llama-2-7b --device cuda --dtype f16 --prompt 128 \
  --new 2 --repeats 1 --no-cuda-graphs >"$OUT/ncu_decode.csv" \
  2>"$OUT/ncu_decode.err"
echo "ncu rc $? $(wc -l <"$OUT/ncu_decode.csv") lines in $((SECONDS - start)) s"
