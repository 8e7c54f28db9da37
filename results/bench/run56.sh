#!/usr/bin/env bash
# Run 56 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test but the model-sized ones, and issue 6's
# decode table (run56_list.txt).
RUN_LIST=results/bench/run56_list.txt RUN_CTEST="-E ModelSized" RUN_NCU=0 \
  bash results/bench/device_run.sh
