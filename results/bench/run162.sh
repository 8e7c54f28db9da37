#!/usr/bin/env bash
# Run 162 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on an H200 only (issues 5, 6 and 7 set their targets
# there; on another card it prints the card and stops): the sparse-op tests
# and every switch's decode, run162_list.txt, then the sparse MLP benchmark's
# early-copies A/B on the OPT-66B and OPT-175B shapes, one round.
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "not an H200, skipped:"
  nvidia-smi -L
  exit 0
fi
RUN_LIST=results/bench/run162_list.txt RUN_NCU=0 \
  RUN_CTEST="-R SparseOps|EverySwitch" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 1 \
  "DYNSPARSE_CUDA_EARLY_MLP=0,DYNSPARSE_CUDA_EARLY_MLP=1" OPT-66B OPT-175B
cd "$OUT" && tar czf logs.tgz build.log parity.log ctest.log ptxas_gemv.txt \
  2>/dev/null
rm -f build.log parity.log ctest.log ptxas_gemv.txt
exit 0
