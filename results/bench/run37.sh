#!/usr/bin/env bash
# Run 37 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the pipelined-decode tests and the OPT-66B DejaVu
# timelines of run37_trace.txt (steps 2-5 against steps 8-11).
RUN_LIST=results/bench/run37_list.txt RUN_TRACE=results/bench/run37_trace.txt \
  RUN_CTEST="-R Pipelined" RUN_NCU=0 bash results/bench/device_run.sh
