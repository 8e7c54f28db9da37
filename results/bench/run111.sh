#!/usr/bin/env bash
# Run 111 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: clusters of 12 (hidden a multiple of 1536: OPT-66B,
# OPT-175B), which would hold OPT-66B's keep-0.1 units in fewer splits than
# clusters of 8: the sparse-op CUDA tests (the fused MLP at 16, 12, 8 and 4),
# run111_list.txt's OPT-66B DejaVu decode at the automatic size and at 12,
# and the sparse MLP kernel benchmark at --cluster 0 and 12, alternated
# twice, with --timeline. The MLP outputs come back in mlp.tgz.
RUN_LIST=results/bench/run111_list.txt RUN_NCU=0 \
  RUN_CTEST="-R SparseOps" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 2 "0 12" OPT-66B OPT-175B
exit 0
