#!/usr/bin/env bash
# Run 100 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse and DejaVu CUDA tests, the sparse MLP kernel
# benchmark on every MLP shape (2 runs), Nsight Compute's full set for one
# FusedSparseMlpKernel launch at OPT-66B keep 0.1, and run100_list.txt's
# decode pairs. The MLP outputs come back in mlp.tgz.
RUN_LIST=results/bench/run100_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Sparse|LazyKv|Dejavu|DejaVu" bash results/bench/device_run.sh
bench=build-cuda-gpu/kernels/cuda/dynsparse_sparse_mlp_bench
[[ -x "$bench" ]] || bench=build-cuda-gpu/kernels_cuda/dynsparse_sparse_mlp_bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/mlp"
for i in 1 2; do
  timeout 90 "$bench" --shape OPT-66B --shape OPT-175B --shape OPT-30B \
    --shape OPT-13B --shape Llama-2-7B \
    >>"$OUT/mlp/sparse_mlp.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
  echo "run $i: rc $?" >>"$OUT/mlp/sparse_mlp.log"
done
timeout 100 ncu --clock-control none --kernel-name regex:FusedSparseMlpKernel \
  --launch-skip 2 --launch-count 1 --set full --import-source no \
  "$bench" --shape OPT-66B --iters 3 >"$OUT/mlp/ncu_fused_mlp.txt" 2>&1
echo "ncu details rc $?" >>"$OUT/mlp/sparse_mlp.log"
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
exit 0
