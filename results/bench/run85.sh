#!/usr/bin/env bash
# Run 85 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: issue 7 item 3 at 4k, dense and lazyllm keys=cached
# alternated three times in one call (run85_list.txt), to see how far the
# ratio moves within one machine.
RUN_LIST=results/bench/run85_list.txt RUN_NCU=0 \
  RUN_CTEST="-R TokenOps --timeout 200" bash results/bench/device_run.sh
