#!/usr/bin/env bash
# Run 96 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test (-E ModelSized) and OPT-66B dense /
# dejavu decode and TTFT (run96_list.txt).
RUN_LIST=results/bench/run96_list.txt RUN_NCU=0 \
  bash results/bench/device_run.sh
