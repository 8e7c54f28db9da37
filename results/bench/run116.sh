#!/usr/bin/env bash
# Run 116 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run 115's machine ran OPT-66B keep 0.1 fastest at clusters
# of 8 (38.5 us, one round), where runs 111 and 114 had 12 and 16 ahead of
# it. Three rounds of the MLP benchmark on OPT-30B and OPT-66B at the
# automatic size (16 first) against 8 and 12, with --timeline, and
# run116_list.txt's OPT-66B DejaVu decode automatic against a forced 8,
# alternated twice. No tests (run 115 ran them on this tree).
RUN_LIST=results/bench/run116_list.txt RUN_NCU=0 \
  RUN_CTEST="-R FusedMlpTimeline" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 3 "0 8 12" OPT-30B OPT-66B
exit 0
