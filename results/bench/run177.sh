#!/usr/bin/env bash
# Run 177 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, for an H200 (issues 5, 6 and 7 set their targets there; on
# another card without OPT-66B, whose 132 GB fit no other, and without the
# sparse MLP A/B): the GEMV tests, the few-row and side-work model tests and the PDL
# load-order check, run177_list.txt, then the sparse MLP benchmark's A/B of
# the split reduction in the fused kernel's launch, one round.
list=results/bench/run177_list.txt
h200=1
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "not an H200: the list without OPT-66B, no sparse MLP A/B"
  grep -v opt-66b "$list" >/tmp/run177_list.txt
  list=/tmp/run177_list.txt
  h200=0
fi
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
cuda_gemv_test cuda_backend_test cuda_sparse_ops_test"
RUN_LIST=$list \
  RUN_CTEST="-R GemvTest|FewRowSteps|SideWork|PdlLoadOrder" \
  bash results/bench/device_run.sh
if [[ $h200 == 1 ]]; then
  bash results/bench/sparse_mlp_ab.sh 1 \
    "DYNSPARSE_CUDA_MLP_SUM_IN_KERNEL=0,DYNSPARSE_CUDA_MLP_SUM_IN_KERNEL=1" \
    OPT-66B OPT-175B
fi
cd "$OUT" && tar czf logs.tgz build.log parity.log ctest.log ptxas_gemv.txt \
  2>/dev/null
rm -f build.log parity.log ctest.log ptxas_gemv.txt
exit 0
