#!/usr/bin/env bash
# Run 70 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the whole CUDA suite at the session's last commit, then
# run70_list.txt (issue 7 item 3 at 4k with lazyllm's keys=cached ablation
# beside the default keys and static pruning).
RUN_LIST=results/bench/run70_list.txt RUN_CTEST="-E ModelSized --timeout 200" \
  RUN_NCU=0 bash results/bench/device_run.sh
