#!/usr/bin/env bash
# Run 127 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the stop's final tree (the one-row GEMV bounds on by
# default, run 126's override removed). Every CUDA test but the model-sized
# ones, and run127_list.txt's dense decode of Llama-2-7B and OPT-6.7B.
RUN_LIST=results/bench/run127_list.txt RUN_NCU=0 RUN_CTEST="-E ModelSized" \
  bash results/bench/device_run.sh
exit 0
