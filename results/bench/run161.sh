#!/usr/bin/env bash
# Run 161 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op and switch tests, DejaVu decode with the
# fused sparse MLP's early copies on and off (run161_list.txt; on an H200,
# where OPT-66B fits, run161_h200_list.txt), then the sparse MLP benchmark's
# A/B of the same switch on the OPT-66B, OPT-175B and Llama-2-7B shapes, two
# rounds.
list=results/bench/run161_list.txt
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 &&
  list=results/bench/run161_h200_list.txt
RUN_LIST=$list RUN_NCU=0 RUN_CTEST="-R SparseOps|CudaSwitches" \
  bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 2 \
  "DYNSPARSE_CUDA_EARLY_MLP=0,DYNSPARSE_CUDA_EARLY_MLP=1" \
  OPT-66B OPT-175B Llama-2-7B
cd "$OUT" && tar czf logs.tgz build.log parity.log ctest.log ptxas_gemv.txt \
  2>/dev/null
rm -f build.log parity.log ctest.log ptxas_gemv.txt
exit 0
