#!/usr/bin/env bash
# Run 108 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test but the model-sized ones (the new
# SparseOpsTest.FusedMlpLaunchPicksTheClusterSize and the fused MLP at
# clusters of 16, 8 and 4 among them), run108_list.txt's decode (OPT-66B and
# Llama-2-7B, dense and DejaVu with the automatic cluster size and with
# clusters of 16), and the sparse MLP kernel benchmark at --cluster 0 (the
# automatic choice), 16 and 8, alternated twice, with --timeline. The MLP
# outputs come back in mlp.tgz.
RUN_LIST=results/bench/run108_list.txt RUN_NCU=0 \
  RUN_CTEST="-E ModelSized" bash results/bench/device_run.sh
build=build-cuda-gpu
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/mlp"
bench=$(find "$build" -name dynsparse_sparse_mlp_bench -type f | head -1)
for i in 1 2; do
  for cluster in 0 16 8; do
    timeout 120 "$bench" --shape OPT-66B --shape OPT-175B --shape OPT-30B \
      --shape OPT-13B --shape Llama-2-7B --timeline --cluster "$cluster" \
      >>"$OUT/mlp/sparse_mlp.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
    echo "run $i cluster $cluster: rc $?" >>"$OUT/mlp/sparse_mlp.log"
  done
done
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
exit 0
