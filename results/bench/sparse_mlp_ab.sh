#!/usr/bin/env bash
# The sparse MLP kernel benchmark as an A/B of the fused kernel's cluster
# sizes, after device_run.sh has built build-cuda-gpu (GPU machine, from the
# repository root): REPEATS rounds, each running
# `dynsparse_sparse_mlp_bench --timeline --cluster C` for every C of
# CLUSTERS in turn over the --shape names given; the JSON lines and stderr go
# to $OUT/mlp.tgz (mlp/sparse_mlp.jsonl, mlp/sparse_mlp.log).
#   bash results/bench/sparse_mlp_ab.sh REPEATS "C1 C2 ..." SHAPE...
set -uo pipefail
repeats=$1 clusters=$2
shift 2
shape_args=()
for shape in "$@"; do shape_args+=(--shape "$shape"); done
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
bench=$(find build-cuda-gpu -name dynsparse_sparse_mlp_bench -type f | head -1)
mkdir -p "$OUT/mlp"
for ((i = 1; i <= repeats; ++i)); do
  for cluster in $clusters; do
    timeout 120 "$bench" "${shape_args[@]}" --timeline --cluster "$cluster" \
      >>"$OUT/mlp/sparse_mlp.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
    echo "run $i cluster $cluster: rc $?" >>"$OUT/mlp/sparse_mlp.log"
  done
done
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
