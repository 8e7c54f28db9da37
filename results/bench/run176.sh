#!/usr/bin/env bash
# Run 176 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, for an H200 (issue 6 item 3 sets its target there; on
# another card the list runs without OPT-66B, whose 132 GB fit no other):
# the GEMV, backend, sparse-op, fused-MLP timeline and PDL load-order tests,
# run176_list.txt, then the sparse MLP benchmark's A/B of the split reduction
# in the fused kernel's launch against a ReduceSplits launch, two rounds, on
# every MLP shape.
list=results/bench/run176_list.txt
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "not an H200: the list without OPT-66B"
  grep -v opt-66b "$list" >/tmp/run176_list.txt
  list=/tmp/run176_list.txt
fi
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
cuda_sparse_ops_test cuda_sparse_mlp_timeline_test cuda_backend_test \
cuda_gemv_test"
RUN_LIST=$list \
  RUN_CTEST="-R SparseOps|FusedMlpTimeline|CudaBackendTest|GemvTest|PdlLoadOrder" \
  bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 2 \
  "DYNSPARSE_CUDA_MLP_SUM_IN_KERNEL=0,DYNSPARSE_CUDA_MLP_SUM_IN_KERNEL=1" \
  OPT-66B OPT-175B OPT-30B OPT-13B Llama-2-7B
cd "$OUT" && tar czf logs.tgz build.log parity.log ctest.log ptxas_gemv.txt \
  2>/dev/null
rm -f build.log parity.log ctest.log ptxas_gemv.txt
exit 0
