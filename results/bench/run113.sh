#!/usr/bin/env bash
# Run 113 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the fused sparse MLP asking L2 for the next units of its
# transposed gather while a block waits for its split's activations
# (--prefetch / DYNSPARSE_CUDA_MLP_PREFETCH), splits of up to 384 / 512 units
# at clusters of 12 / 16, and the split reduction loading its partials in
# batches: the sparse-op and timeline CUDA tests, run113_list.txt's OPT-66B
# DejaVu decode with and without a 48-unit prefetch, and the MLP kernel
# benchmark over prefetch 0 / 48 / 144 at the automatic size and 0 / 48 at
# clusters of 16, alternated twice, with --timeline.
RUN_LIST=results/bench/run113_list.txt RUN_NCU=0 \
  RUN_CTEST="-R SparseOps|FusedMlpTimeline" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 2 "--cluster 0 --prefetch 0,--cluster 0 --prefetch 48,--cluster 0 --prefetch 144,--cluster 16 --prefetch 0,--cluster 16 --prefetch 48" OPT-66B
exit 0
