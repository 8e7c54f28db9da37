#!/usr/bin/env bash
# Run 49 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op, switch and predictor-trainer CUDA tests,
# memcheck of the sparse-op tests, the sparse MLP kernel benchmark
# ($OUT/sparse_mlp.jsonl, $OUT/dejavu.log: the one-launch MLP on every shape
# against the two gathers), and the decode benchmarks of run49_list.txt.
DS_CUDA_DEJAVU_BENCH=1 DS_CUDA_DEJAVU_E2E=0 RUN_LIST=results/bench/run49_list.txt \
  RUN_CTEST="-R SparseOps|Switch|PredictorTrainer" \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test" RUN_NCU=0 \
  bash results/bench/device_run.sh
