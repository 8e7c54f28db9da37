#!/usr/bin/env bash
# Run 45 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op tests, memcheck
# of the sparse-op tests, the sparse MLP kernel benchmark
# (kernels/cuda/sparse_mlp_bench.cc, issue 6 item 3) into $OUT/sparse_mlp.jsonl
# and $OUT/dejavu.log, and the decode benchmarks of run45_list.txt.
DS_CUDA_DEJAVU_BENCH=1 DS_CUDA_DEJAVU_E2E=0 RUN_LIST=results/bench/run45_list.txt \
  RUN_CTEST="-R SparseOps" RUN_SANITIZE_TESTS="cuda_sparse_ops_test" RUN_NCU=0 \
  bash results/bench/device_run.sh
