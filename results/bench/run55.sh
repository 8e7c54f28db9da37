#!/usr/bin/env bash
# Run 55 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op, switch and predictor-trainer CUDA tests,
# memcheck of the sparse-op tests (the cp.async-staged sparse MLP), the
# sparse MLP kernel bench ($OUT/sparse_mlp.jsonl, $OUT/dejavu.log) and the
# decode benchmarks of run55_list.txt.
DS_CUDA_DEJAVU_BENCH=1 DS_CUDA_DEJAVU_E2E=0 RUN_LIST=results/bench/run55_list.txt \
  RUN_CTEST="-R SparseOps|Switch|PredictorTrainer" \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test" RUN_NCU=0 \
  bash results/bench/device_run.sh
