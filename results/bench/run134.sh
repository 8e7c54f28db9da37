#!/usr/bin/env bash
# Run 134 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the stop's final tree (runs 129-133's experiments removed,
# the argmax's float4 loads kept). Every CUDA test but the model-sized ones,
# and run134_list.txt's dense decode of Llama-2-7B and OPT-6.7B.
RUN_LIST=results/bench/run134_list.txt RUN_NCU=0 RUN_CTEST="-E ModelSized" \
  bash results/bench/device_run.sh
exit 0
