#!/usr/bin/env bash
# Run 103 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, after the fused sparse MLP took its split reduction in
# (the last split to arrive sums): the sparse and DejaVu CUDA tests, the
# OPT-66B decode pair of run103_list.txt, and the sparse MLP kernel benchmark
# with --timeline on the OPT-66B, OPT-175B, OPT-30B and Llama-2-7B shapes
# (2 runs). The MLP outputs come back in mlp.tgz.
RUN_LIST=results/bench/run103_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Sparse|LazyKv|Dejavu|DejaVu|Timeline|DeviceContext" bash results/bench/device_run.sh
bench=build-cuda-gpu/kernels/cuda/dynsparse_sparse_mlp_bench
[[ -x "$bench" ]] || bench=build-cuda-gpu/kernels_cuda/dynsparse_sparse_mlp_bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/mlp"
for i in 1 2; do
  timeout 120 "$bench" --shape OPT-66B --shape OPT-175B --shape OPT-30B \
    --shape Llama-2-7B --timeline \
    >>"$OUT/mlp/sparse_mlp.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
  echo "run $i: rc $?" >>"$OUT/mlp/sparse_mlp.log"
done
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
exit 0
