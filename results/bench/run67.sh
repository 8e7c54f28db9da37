#!/usr/bin/env bash
# Run 67 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the whole CUDA suite at 80aaaf7 (the RotatePair / ActByCode
# review, not yet run on the GPU), then run67_list.txt (dense decode at HEAD).
RUN_LIST=results/bench/run67_list.txt RUN_CTEST="-E ModelSized --timeout 200" \
  RUN_NCU=0 bash results/bench/device_run.sh
