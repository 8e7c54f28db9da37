#!/usr/bin/env bash
# Run 95 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the one-launch sparse MLP in clusters of 4 against 8
# column blocks (sparse_mlp_bench --cluster, alternated 8/4/8/4 on the MLP
# shapes), the sparse CUDA tests, and issue 6's decode pair on OPT-66B with
# the automatic choice (run95_list.txt).
RUN_LIST=results/bench/run95_list.txt RUN_NCU=0 RUN_CTEST="-R Sparse|LazyKv" \
  bash results/bench/device_run.sh
bench=build-cuda-gpu/kernels/cuda/dynsparse_sparse_mlp_bench
[[ -x "$bench" ]] || bench=build-cuda-gpu/kernels_cuda/dynsparse_sparse_mlp_bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
for cluster in 8 4 8 4; do
  timeout 60 "$bench" --cluster "$cluster" --shape OPT-66B --shape OPT-30B \
    --shape OPT-13B --shape Llama-2-7B >>"$OUT/sparse_mlp.jsonl" \
    2>>"$OUT/sparse_mlp.log"
  echo "cluster $cluster: rc $?" >>"$OUT/sparse_mlp.log"
done
