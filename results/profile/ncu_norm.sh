#!/usr/bin/env bash
# Nsight Compute on the one-row LayerNorm (NormKernel) of DejaVu decode steps
# on the 8-layer OPT-66B-shaped slice: where its ~10 us in the step's graph
# go (warp stall reasons and per-instruction samples). Run after
# run_on_gpu.sh built dynsparse-bench; writes $OUT/ncu_norm.txt.
set -uo pipefail
bench=build-cuda-gpu/dynsparse-bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout 240 ncu --clock-control none --kernel-name regex:'NormKernel' \
  --launch-skip 20 --launch-count 3 \
  --section SpeedOfLight --section LaunchStats --section Occupancy \
  --section WarpStateStats --section SchedulerStats --section SourceCounters \
  --print-details all \
  "$bench" --model random:results/profile/opt-66b-8-layers/config.json \
  --device cuda --dtype f16 --prompt 128 --new 4 --repeats 1 --no-cuda-graphs \
  --method dejavu --method-arg mlp_keep=0.1 --method-arg dense_last_mlp=1 \
  --method-arg head_keep=0.5 --method-arg dense_first_heads=1 \
  --method-arg predictors=random:1000 >"$OUT/ncu_norm.txt" 2>&1
echo "ncu norm -> rc $? $(wc -l <"$OUT/ncu_norm.txt") lines"
