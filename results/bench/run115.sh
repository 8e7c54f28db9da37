#!/usr/bin/env bash
# Run 115 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: ReLU MLPs from hidden 7168 try clusters of 16 first (run
# 114: OPT-66B keep 0.1 40.1-40.4 us at 16 against 40.9-41.2 at 12): the
# sparse-op and timeline CUDA tests (FusedMlpLaunchPicksTheClusterSize with
# the new order), run115_list.txt's OPT-66B DejaVu decode automatic against a
# forced 12, and the MLP benchmark on OPT-13B, OPT-30B and OPT-66B at the
# automatic size against 8 and 12, with --timeline.
RUN_LIST=results/bench/run115_list.txt RUN_NCU=0 \
  RUN_CTEST="-R SparseOps|FusedMlpTimeline" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 1 "0 8 12" OPT-13B OPT-30B OPT-66B
exit 0
