#!/usr/bin/env bash
# Run 145 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the tree with run 144's defaults (keyed attention of any
# row count and dense decode attention from 4096 keys on the pipelined
# tensor-core split kernel). Every CUDA test but the model-sized ones, and
# dense / LazyLLM decode at 4k-16k in two rounds (run145_list.txt).
RUN_LIST=results/bench/run145_list.txt RUN_NCU=0 \
  RUN_CTEST="-E ModelSized --timeout 300" \
  bash results/bench/device_run.sh
