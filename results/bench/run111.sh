#!/usr/bin/env bash
# Run 111 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: clusters of 12 (hidden a multiple of 1536: OPT-66B,
# OPT-175B), which would hold OPT-66B's keep-0.1 units in fewer splits than
# clusters of 8: the sparse-op CUDA tests (the fused MLP at 16, 12, 8 and 4),
# run111_list.txt's OPT-66B DejaVu decode at the automatic size and at 12,
# and the sparse MLP kernel benchmark at --cluster 0 and 12, alternated
# twice, with --timeline. The MLP outputs come back in mlp.tgz.
RUN_LIST=results/bench/run111_list.txt RUN_NCU=0 \
  RUN_CTEST="-R SparseOps" bash results/bench/device_run.sh
build=build-cuda-gpu
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/mlp"
bench=$(find "$build" -name dynsparse_sparse_mlp_bench -type f | head -1)
for i in 1 2; do
  for cluster in 0 12; do
    timeout 120 "$bench" --shape OPT-66B --shape OPT-175B --timeline \
      --cluster "$cluster" \
      >>"$OUT/mlp/sparse_mlp.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
    echo "run $i cluster $cluster: rc $?" >>"$OUT/mlp/sparse_mlp.log"
  done
done
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
exit 0
