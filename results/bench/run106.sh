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
tests=$(find build-cuda-gpu -name cuda_backend_test -type f | head -1)
mkdir -p "$OUT/mlp"
LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}" \
  timeout 120 "$tests" --gtest_filter='*EverySwitch*' \
  >"$OUT/mlp/every_switch.log" 2>&1
echo "every switch: rc $?" >>"$OUT/mlp/every_switch.log"
bash results/bench/sparse_mlp_ab.sh 2 "8 4" OPT-66B OPT-175B OPT-30B OPT-13B Llama-2-7B
exit 0
