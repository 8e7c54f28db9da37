#!/usr/bin/env bash
# Run 53 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test but the model-sized ones (the opened
# TrainDevice reused across predictors, the fused sparse MLP at hidden 12288
# included), and issue 5's two decode shapes.
RUN_LIST=results/bench/run53_list.txt RUN_CTEST="-E ModelSized" RUN_NCU=0 \
  bash results/bench/device_run.sh
