#!/usr/bin/env bash
# Run 158 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run157_list.txt (prompt-128 dense decode for issue 5 item 2,
# the issue 7 item 3 table) with only the switch and TopCount tests (run 157
# ran the full set on this code), then the sparse MLP benchmark on the OPT-66B
# and OPT-175B shapes (issue 6 item 3) at the automatic cluster size, 8 and 16,
# two rounds.
RUN_LIST=results/bench/run157_list.txt RUN_NCU=0 \
  RUN_CTEST="-R CudaSwitches|TopCount" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 2 "0 8 16" OPT-66B OPT-175B
exit 0
