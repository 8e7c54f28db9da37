#!/usr/bin/env bash
# Run 99 (run again as 99b: the first try named the switch DYNSPARSE_CUDA_*, which
# the backend rejects as unknown) on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: stage counts of the fused sparse MLP (ReLU, f16), switched
# by the experiment's DS_EXPERIMENT_MLP_STAGES=UD (U up-projection units in
# flight a thread, D transposed-gather units; 0 = the build's 4 and 8):
# the fused MLP test under each, then the sparse MLP benchmark on the OPT-66B,
# OPT-30B and OPT-13B shapes, each variant twice, alternated.
RUN_LIST=results/bench/run97_list.txt RUN_NCU=0 RUN_CTEST="-R FusedSparseMlp" \
  DS_CUDA_TARGETS="cuda_sparse_ops_test dynsparse_sparse_mlp_bench dynsparse-bench" \
  bash results/bench/device_run.sh
build=build-cuda-gpu/kernels/cuda
[[ -d "$build" ]] || build=build-cuda-gpu/kernels_cuda
test_bin=build-cuda-gpu/tests/cuda/cuda_sparse_ops_test
[[ -x "$test_bin" ]] || test_bin=$(find build-cuda-gpu -name cuda_sparse_ops_test -type f | head -1)
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/mlp"
variants="0 24 28 34 38 44 16 26"
for v in $variants; do
  DS_EXPERIMENT_MLP_STAGES=$v timeout 60 "$test_bin" \
    --gtest_filter='*FusedSparseMlp*' >>"$OUT/mlp/tests.log" 2>&1
  echo "variant $v test rc $?" >>"$OUT/mlp/sparse_mlp.log"
done
for pass in 1 2; do
  for v in $variants; do
    echo "{\"variant\": $v, \"pass\": $pass}" >>"$OUT/mlp/sparse_mlp.jsonl"
    DS_EXPERIMENT_MLP_STAGES=$v timeout 60 "$build/dynsparse_sparse_mlp_bench" \
      --shape OPT-66B --shape OPT-30B --shape OPT-13B \
      >>"$OUT/mlp/sparse_mlp.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
    echo "variant $v pass $pass rc $?" >>"$OUT/mlp/sparse_mlp.log"
  done
done
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
exit 0
