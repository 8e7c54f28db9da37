#!/usr/bin/env bash
# Run 57 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op CUDA tests and their memcheck, run57_list.txt's
# decode benchmarks, then the sparse MLP kernel bench with the splits summed in
# the kernel (default) and by ReduceSplits (DYNSPARSE_CUDA_FUSED_MLP_REDUCE=0,
# an experiment switch), alternated twice, into $OUT/variants.jsonl /
# variants.log.
set -u
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
RUN_LIST=results/bench/run57_list.txt RUN_CTEST="-R SparseOps" RUN_NCU=0 \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test" bash results/bench/device_run.sh
bench=build-cuda-gpu/kernels_cuda/dynsparse_sparse_mlp_bench
for r in 1 0 1 0; do
  echo "reduce $r" >>"$OUT/variants.log"
  DYNSPARSE_CUDA_FUSED_MLP_REDUCE=$r timeout 80 "$bench" --shape OPT-66B \
    --shape OPT-175B --shape OPT-30B --shape Llama-2-7B \
    2>>"$OUT/variants.log" |
    sed "s/^{/{\"reduce\": $r, /" >>"$OUT/variants.jsonl"
done
