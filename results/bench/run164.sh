#!/usr/bin/env bash
# Run 164 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the GEMV and CudaBackend tests, then issue 5 item 2's
# dense decode with the GEMV store prefetch on and off (run164_list.txt); on
# an H200 also run163_tables.sh (the kernel tables of late 8k steps, the
# OPT-66B sparse MLP's cluster sizes).
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
dynsparse_cupti_trace cuda_gemv_test cuda_backend_test"
RUN_LIST=results/bench/run164_list.txt RUN_NCU=0 RUN_PACK_LOGS=1 \
  RUN_CTEST="-R Gemv|CudaBackendTest" bash results/bench/device_run.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash results/bench/run163_tables.sh
fi
exit 0
