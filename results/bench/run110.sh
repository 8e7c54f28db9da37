#!/usr/bin/env bash
# Run 110 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test but the model-sized ones (gated MLPs now
# try clusters of 16 first), run110_list.txt's Llama-2-7B decode (dense, and
# DejaVu at the automatic cluster size and at 8, alternated), and the sparse
# MLP kernel benchmark at --cluster 0 with --timeline. The MLP outputs come
# back in mlp.tgz.
RUN_LIST=results/bench/run110_list.txt RUN_NCU=0 \
  RUN_CTEST="-E ModelSized" bash results/bench/device_run.sh
build=build-cuda-gpu
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/mlp"
bench=$(find "$build" -name dynsparse_sparse_mlp_bench -type f | head -1)
timeout 120 "$bench" --shape OPT-66B --shape OPT-175B --shape OPT-30B \
  --shape OPT-13B --shape Llama-2-7B --timeline --cluster 0 \
  >>"$OUT/mlp/sparse_mlp.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
echo "cluster 0: rc $?" >>"$OUT/mlp/sparse_mlp.log"
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
exit 0
