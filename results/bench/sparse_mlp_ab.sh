#!/usr/bin/env bash
# The sparse MLP kernel benchmark as an A/B of the fused kernel's settings,
# after device_run.sh has built build-cuda-gpu (GPU machine, from the
# repository root): REPEATS rounds, each running
# `dynsparse_sparse_mlp_bench --timeline VARIANT` for every VARIANT in turn
# over the --shape names given; the JSON lines and stderr go to $OUT/mlp.tgz
# (mlp/sparse_mlp.jsonl, mlp/sparse_mlp.log).
#   bash results/bench/sparse_mlp_ab.sh REPEATS "C1 C2 ..." SHAPE...
#   bash results/bench/sparse_mlp_ab.sh REPEATS "ARGS1,ARGS2,..." SHAPE...
# The first form's variants are cluster sizes (--cluster C); the second's,
# separated by commas, are bench arguments ("--cluster 12 --prefetch 64"),
# where words of the form NAME=VALUE go to the environment instead
# ("DYNSPARSE_CUDA_EARLY_MLP=0 --cluster 8").
set -uo pipefail
repeats=$1
if [[ $2 == *,* || $2 == *-* ]]; then
  IFS=',' read -ra variants <<<"$2"
else
  variants=()
  for cluster in $2; do variants+=("--cluster $cluster"); done
fi
shift 2
shape_args=()
for shape in "$@"; do shape_args+=(--shape "$shape"); done
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
bench=$(find build-cuda-gpu -name dynsparse_sparse_mlp_bench -type f | head -1)
mkdir -p "$OUT/mlp"
for ((i = 1; i <= repeats; ++i)); do
  for variant in "${variants[@]}"; do
    settings=()
    args=()
    for word in $variant; do
      if [[ $word == *=* ]]; then settings+=("$word"); else args+=("$word"); fi
    done
    echo "{\"variant\": \"$variant\"}" >>"$OUT/mlp/sparse_mlp.jsonl"
    timeout 120 env "${settings[@]}" "$bench" "${shape_args[@]}" --timeline \
      "${args[@]}" >>"$OUT/mlp/sparse_mlp.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
    echo "run $i $variant: rc $?" >>"$OUT/mlp/sparse_mlp.log"
  done
done
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
