#!/usr/bin/env bash
# Run 109 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run 108 again for clusters of 16, which its build never
# launched (a forced size outside 8 and 4 fell back to the two gathers): the
# sparse-op CUDA tests, run109_list.txt's OPT-66B DejaVu decode with the
# automatic cluster size and with clusters of 16, and the sparse MLP kernel
# benchmark at --cluster 16 and 8, alternated twice, with --timeline.
RUN_LIST=results/bench/run109_list.txt RUN_NCU=0 \
  RUN_CTEST="-R SparseOps" bash results/bench/device_run.sh
build=build-cuda-gpu
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/mlp"
bench=$(find "$build" -name dynsparse_sparse_mlp_bench -type f | head -1)
for i in 1 2; do
  for cluster in 16 8; do
    timeout 120 "$bench" --shape OPT-66B --shape OPT-175B --shape OPT-30B \
      --shape OPT-13B --shape Llama-2-7B --timeline --cluster "$cluster" \
      >>"$OUT/mlp/sparse_mlp.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
    echo "run $i cluster $cluster: rc $?" >>"$OUT/mlp/sparse_mlp.log"
  done
done
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
exit 0
