#!/usr/bin/env bash
# Run 72 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the token-path CUDA tests, then run72_list.txt (issue 7
# item 3 at 8k and 16k with lazyllm's default keys and keys=cached).
RUN_LIST=results/bench/run72_list.txt RUN_CTEST="-R TokenOps --timeout 200" \
  RUN_NCU=0 bash results/bench/device_run.sh
