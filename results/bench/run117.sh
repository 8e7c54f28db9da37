#!/usr/bin/env bash
# Run 117 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the automatic order takes 16 for ReLU MLPs (hidden >= 7168)
# only while its splits hold at most 288 units (runs 115-116: OPT-30B keep
# 0.25, 341 units a split at 16, lost to 8): the sparse-op and timeline CUDA
# tests (FusedMlpLaunchPicksTheClusterSize with that limit) and the MLP
# benchmark on OPT-30B and OPT-66B at the automatic size, with --timeline.
RUN_LIST=results/bench/run117_list.txt RUN_NCU=0 \
  RUN_CTEST="-R SparseOps|FusedMlpTimeline" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 1 "0" OPT-30B OPT-66B
exit 0
