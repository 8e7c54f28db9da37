#!/usr/bin/env bash
# Run 65 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test but the model-sized ones (the decode stack
# tests among them), then run65_list.txt: the decode stack against the layer
# kernels, and issue 7 item 3's 8k / 16k rows.
RUN_LIST=results/bench/run65_list.txt RUN_CTEST="-E ModelSized" RUN_NCU=0 \
  bash results/bench/device_run.sh
