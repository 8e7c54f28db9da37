#!/usr/bin/env bash
# Run 106 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test but the model-sized ones (the new
# CudaBackendTest.EverySwitchDecodesAnF16Model and the fused MLP at clusters
# of 8 and 4 among them; EverySwitch's per-switch errors again verbosely),
# run106_list.txt's OPT-66B decode (dense, DejaVu at clusters of 8 and of 4),
# and the sparse MLP kernel benchmark at --cluster 8 and 4, alternated twice,
# with --timeline. The MLP outputs come back in mlp.tgz.
RUN_LIST=results/bench/run106_list.txt RUN_NCU=0 \
  RUN_CTEST="-E ModelSized" bash results/bench/device_run.sh
build=build-cuda-gpu
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/mlp"
tests=$(find "$build" -name cuda_backend_test -type f | head -1)
timeout 120 "$tests" --gtest_filter='*EverySwitch*' \
  >"$OUT/mlp/every_switch.log" 2>&1
echo "every switch: rc $?" >>"$OUT/mlp/every_switch.log"
bench=$(find "$build" -name dynsparse_sparse_mlp_bench -type f | head -1)
for i in 1 2; do
  for cluster in 8 4; do
    timeout 120 "$bench" --shape OPT-66B --shape OPT-175B --shape OPT-30B \
      --shape OPT-13B --shape Llama-2-7B --timeline --cluster "$cluster" \
      >>"$OUT/mlp/sparse_mlp.jsonl" 2>>"$OUT/mlp/sparse_mlp.log"
    echo "run $i cluster $cluster: rc $?" >>"$OUT/mlp/sparse_mlp.log"
  done
done
cd "$OUT" && tar czf mlp.tgz mlp && rm -rf mlp
exit 0
