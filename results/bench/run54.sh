#!/usr/bin/env bash
# Run 54 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op CUDA tests and run54_list.txt's decode
# benchmarks, then the sparse MLP kernel bench on every shape with the
# cp.async-staged kernel (default) and the register-staged one
# (DYNSPARSE_CUDA_FUSED_MLP_PIPELINE=0, an experiment switch since removed),
# alternated twice, into $OUT/variants.jsonl / variants.log.
set -u
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
RUN_LIST=results/bench/run54_list.txt RUN_CTEST="-R SparseOps" RUN_NCU=0 \
  bash results/bench/device_run.sh
bench=build-cuda-gpu/kernels_cuda/dynsparse_sparse_mlp_bench
for p in 1 0 1 0; do
  echo "pipeline $p" >>"$OUT/variants.log"
  DYNSPARSE_CUDA_FUSED_MLP_PIPELINE=$p timeout 100 "$bench" --shape OPT-66B \
    --shape OPT-175B --shape OPT-30B --shape OPT-13B --shape Llama-2-7B \
    2>>"$OUT/variants.log" |
    sed "s/^{/{\"pipeline\": $p, /" >>"$OUT/variants.jsonl"
done
