#!/usr/bin/env bash
# Run 114 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, with ab_old/ (an untracked copy of b6800e3's code, made by
# `git archive b6800e3 core kernels tests experiments methods tools datasets
# CMakeLists.txt`) beside it: run 113 found the fused sparse MLP ~3 us slower
# at OPT-66B keep 0.1 than runs 111-112 had measured, on a machine that ran
# the two gathers and the dense MLP as fast as before. This call times
# b6800e3's kernel against this tree's (splits of up to 384 / 512 units at
# clusters of 12 / 16) in one process order on one machine: the sparse-op
# and timeline CUDA tests, run114_list.txt's OPT-66B DejaVu decode at the
# automatic size and at 16, then three rounds of the MLP benchmark (OPT-66B,
# --timeline): b6800e3 --cluster 0, this tree --cluster 0, this tree
# --cluster 16. The MLP outputs come back in mlp.tgz (old.jsonl, new.jsonl).
RUN_LIST=results/bench/run114_list.txt RUN_NCU=0 \
  RUN_CTEST="-R SparseOps|FusedMlpTimeline" bash results/bench/device_run.sh
root=$PWD
mkdir -p /tmp/old_out "$OUT/mlp"
(cd ab_old && OUT=/tmp/old_out DS_CUDA_DEPS="$root/build_cuda_deps" \
  DS_CUDA_TARGETS=dynsparse_sparse_mlp_bench DS_CUDA_SKIP_PTXAS=1 \
  DS_CUDA_SKIP_BENCH=1 DS_CUDA_SKIP_PLANS=1 DS_CUDA_CTEST_ARGS="-R none_at_all" \
  bash kernels/cuda/run_on_gpu.sh >/tmp/old_out/run.log 2>&1)
echo "b6800e3 build: $(grep -c . /tmp/old_out/run.log) lines, $(tail -1 /tmp/old_out/run.log)" >>"$OUT/run.log"
export LD_LIBRARY_PATH="$root/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
old=$(find ab_old/build-cuda-gpu -name dynsparse_sparse_mlp_bench -type f | head -1)
new=$(find build-cuda-gpu -name dynsparse_sparse_mlp_bench -type f | head -1)
for i in 1 2 3; do
  timeout 120 "$old" --shape OPT-66B --timeline --cluster 0 \
    >>"$OUT/mlp/old.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
  echo "round $i old 0: rc $?" >>"$OUT/mlp/sparse_mlp.log"
  for cluster in 0 16; do
    timeout 120 "$new" --shape OPT-66B --timeline --cluster "$cluster" \
      >>"$OUT/mlp/new.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
    echo "round $i new $cluster: rc $?" >>"$OUT/mlp/sparse_mlp.log"
  done
done
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
exit 0
