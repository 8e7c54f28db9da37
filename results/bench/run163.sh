#!/usr/bin/env bash
# Run 163 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on an H200 only (elsewhere it prints the card and stops):
# the list $RUN163_LIST (default run163_list.txt: issue 7 item 3 at 8k), then
# run163_tables.sh (the kernel tables of late 8k steps, the OPT-66B sparse
# MLP's cluster sizes). No tests.
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "not an H200, skipped:"
  nvidia-smi -L
  exit 0
fi
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
dynsparse_cupti_trace"
RUN_LIST="${RUN163_LIST:-results/bench/run163_list.txt}" RUN_NCU=0 \
  RUN_PACK_LOGS=1 RUN_CTEST="-R NoTestHasThisName" \
  bash results/bench/device_run.sh
bash results/bench/run163_tables.sh
exit 0
