#!/usr/bin/env bash
# Run 104 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: when the fused sparse MLP should release its successor
# (programmatic dependent launch). Run 103 summed the splits in the kernel and
# lost 9 us on OPT-66B: launched while the previous MLP still ran, a cluster
# began up to 29 us late. DS_EXP_FUSED_MLP_PDL (an experiment switch of
# sparse_mlp.cu at this commit): 0 release at the start, 1 after the gather,
# 2 at exit, 3 no PDL launch, 4 the separate ReduceSplits (run 102's code).
# The fused-MLP CUDA test under each, then the kernel benchmark with
# --timeline on three shapes, modes interleaved, 2 rounds; outputs in mlp.tgz.
RUN_LIST= RUN_NCU=0 RUN_CTEST="-R SparseOps" bash results/bench/device_run.sh
bin=build-cuda-gpu/kernels/cuda
[[ -x "$bin/dynsparse_sparse_mlp_bench" ]] || bin=build-cuda-gpu/kernels_cuda
test_bin=$(find build-cuda-gpu -name cuda_sparse_ops_test -type f | head -1)
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/mlp"
for m in 0 1 2 3 4; do
  DS_EXP_FUSED_MLP_PDL=$m timeout 60 "$test_bin" --gtest_filter='*FusedSparseMlp*' \
    >>"$OUT/mlp/tests.log" 2>&1
  echo "mode $m test rc $?" >>"$OUT/mlp/tests.log"
done
for round in 1 2; do
  for m in 4 0 1 2 3; do
    DS_EXP_FUSED_MLP_PDL=$m timeout 60 "$bin/dynsparse_sparse_mlp_bench" \
      --shape OPT-66B --shape OPT-30B --shape Llama-2-7B --timeline \
      >>"$OUT/mlp/mode$m.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
    echo "round $round mode $m rc $?" >>"$OUT/mlp/sparse_mlp.log"
  done
done
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
exit 0
