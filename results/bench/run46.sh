#!/usr/bin/env bash
# Run 46 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test (`ctest -L cuda -E ModelSized`), the
# sparse MLP kernel benchmark with the defaults ($OUT/sparse_mlp.jsonl,
# $OUT/dejavu.log) and with the early loads and the cluster TopK switched off
# ($OUT/sparse_mlp_ab.jsonl), and the decode benchmarks of run46_list.txt.
DS_CUDA_DEJAVU_BENCH=1 DS_CUDA_DEJAVU_E2E=0 RUN_LIST=results/bench/run46_list.txt \
  RUN_NCU=0 bash results/bench/device_run.sh
sbench=build-cuda-gpu/kernels/cuda/dynsparse_sparse_mlp_bench
[[ -x "$sbench" ]] || sbench=build-cuda-gpu/kernels_cuda/dynsparse_sparse_mlp_bench
DYNSPARSE_CUDA_SPARSE_EARLY=0 DYNSPARSE_CUDA_TOPK_CLUSTER=0 timeout 150 \
  "$sbench" >"$OUT/sparse_mlp_ab.jsonl" 2>>"$OUT/dejavu.log" ||
  echo "FAILED: sparse MLP benchmark, switches off" >>"$OUT/dejavu.log"
