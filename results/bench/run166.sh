#!/usr/bin/env bash
# Run 166 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the GEMV tests and run166_list.txt (keys=cached at 8k with
# the tensor-core GEMV's L2 prefetch on and off); on an H200 also
# run165_list.txt (issue 5 item 2 with the store prefetch on and off) and
# run163_tables.sh (the kernel tables of late 8k steps, the OPT-66B sparse
# MLP's cluster sizes).
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
dynsparse_cupti_trace cuda_gemv_test"
list=results/bench/run166_list.txt
h200=0
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  h200=1
  list="$OUT/run166_h200_list.txt"
  cat results/bench/run166_list.txt results/bench/run165_list.txt >"$list"
fi
RUN_LIST="$list" RUN_NCU=0 RUN_PACK_LOGS=1 RUN_CTEST="-R Gemv" \
  bash results/bench/device_run.sh
rm -f "$OUT/run166_h200_list.txt"
[[ $h200 == 1 ]] && bash results/bench/run163_tables.sh
exit 0
