#!/usr/bin/env bash
# Run 58 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test but the model-sized ones, and
# run58_list.txt's dense decode A/B of the decode attention's L2 prefetch of
# cached keys and values (DYNSPARSE_CUDA_KV_PREFETCH, an experiment switch).
RUN_LIST=results/bench/run58_list.txt RUN_CTEST="-E ModelSized" RUN_NCU=0 \
  bash results/bench/device_run.sh
