#!/usr/bin/env bash
# Run 71 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the token-path CUDA tests, then run71_list.txt (where a
# lazyllm decode step's time goes with the default keys and with
# keys=cached: --token-profile, 4k prompt).
RUN_LIST=results/bench/run71_list.txt RUN_CTEST="-R TokenOps --timeout 200" \
  RUN_NCU=0 bash results/bench/device_run.sh
