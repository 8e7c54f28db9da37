#!/usr/bin/env bash
# Run 138 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: dense decode of Llama-2-7B and OPT-6.7B (run134_list.txt,
# issue 5 item 2) after the GEMV, attention and backend files were split by
# purpose, against run 134's 3.625 / 3.843 ms. The GEMV tests only.
RUN_LIST=results/bench/run134_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv --timeout 300" \
  bash results/bench/device_run.sh
