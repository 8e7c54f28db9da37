#!/usr/bin/env bash
# Run 47 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test (`ctest -L cuda -E ModelSized`), memcheck
# of the sparse-op tests (the cluster TopK, the one-launch sparse MLP), the
# sparse MLP kernel benchmark with the defaults ($OUT/sparse_mlp.jsonl,
# $OUT/dejavu.log: one launch against the two gathers) and with the cluster
# TopK off ($OUT/sparse_mlp_ab.jsonl), the predictor trainer's
# one-layer timing when built ($OUT/train_bench.log), and the decode
# benchmarks of run47_list.txt.
DS_CUDA_DEJAVU_BENCH=1 DS_CUDA_DEJAVU_E2E=0 RUN_LIST=results/bench/run47_list.txt \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test" RUN_NCU=0 \
  bash results/bench/device_run.sh
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu"
bin=build-cuda-gpu/kernels_cuda
[[ -d "$bin" ]] || bin=build-cuda-gpu/kernels/cuda
DYNSPARSE_CUDA_TOPK_CLUSTER=0 timeout 150 "$bin/dynsparse_sparse_mlp_bench" \
  >"$OUT/sparse_mlp_ab.jsonl" 2>>"$OUT/dejavu.log" ||
  echo "FAILED: sparse MLP benchmark, cluster TopK off" >>"$OUT/dejavu.log"
if [[ -x "$bin/dynsparse_predictor_train_bench" ]]; then
  timeout 120 "$bin/dynsparse_predictor_train_bench" >"$OUT/train_bench.log" 2>&1 ||
    echo "FAILED: predictor training benchmark" >>"$OUT/train_bench.log"
fi
