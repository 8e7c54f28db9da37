#!/usr/bin/env bash
# Run 52 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op CUDA tests, the decode benchmarks of
# run52_list.txt, then the sparse MLP kernel bench on the OPT shapes under each
# DYNSPARSE_CUDA_FUSED_MLP_VARIANT (bit 0: 576-thread build for hidden <= 9216,
# bit 1: the transposed gather's first loads before the cluster barrier) into
# $OUT/variants.jsonl / variants.log.
RUN_LIST=results/bench/run52_list.txt RUN_CTEST="-R SparseOps" RUN_NCU=0 \
  bash results/bench/device_run.sh
bench=build-cuda-gpu/kernels_cuda/dynsparse_sparse_mlp_bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for v in 3 0 1 2 3; do
  echo "variant $v" >>"$OUT/variants.log"
  DYNSPARSE_CUDA_FUSED_MLP_VARIANT=$v timeout 90 "$bench" --shape OPT-66B \
    --shape OPT-175B --shape OPT-30B 2>>"$OUT/variants.log" |
    sed "s/^{/{\"variant\": $v, /" >>"$OUT/variants.jsonl"
done
