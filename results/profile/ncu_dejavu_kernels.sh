#!/usr/bin/env bash
# Nsight Compute sections (speed of light, occupancy, launch statistics,
# memory workload) of the DejaVu decode kernels that stand furthest from
# their weight bytes in ncu_dejavu.sh's table: the lazy K/V completion, the
# O-projection over kept head columns and the one-block TopK. Same 8-layer
# OPT-66B slice and settings; every launch of the second decode step.
# Run after run_on_gpu.sh built dynsparse-bench; writes $OUT/ncu_kernels.txt.
set -uo pipefail
bench=build-cuda-gpu/dynsparse-bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout 300 ncu --clock-control none \
  --kernel-name regex:'LazyKv(Compute|Mma)Kernel|GatherColumnsGemvKernel|TopKSelectKernel' \
  --launch-skip 28 --launch-count 21 \
  --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section MemoryWorkloadAnalysis --section WarpStateStats \
  "$bench" --model random:results/profile/opt-66b-8-layers/config.json \
  --device cuda --dtype f16 --prompt 128 --new 3 --repeats 1 --no-cuda-graphs \
  --method dejavu --method-arg mlp_keep=0.1 --method-arg dense_last_mlp=1 \
  --method-arg head_keep=0.5 --method-arg dense_first_heads=1 \
  --method-arg predictors=random:1000 >"$OUT/ncu_kernels.txt" 2>&1
echo "ncu sections -> rc $? $(wc -l <"$OUT/ncu_kernels.txt") lines"
