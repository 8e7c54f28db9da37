#!/usr/bin/env bash
# Run 112 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the automatic cluster order with 12 first for ReLU MLPs
# (run 111): the sparse-op CUDA tests and run112_list.txt's OPT-66B DejaVu
# decode, twice.
RUN_LIST=results/bench/run112_list.txt RUN_NCU=0 \
  RUN_CTEST="-R SparseOps" bash results/bench/device_run.sh
exit 0
