#!/usr/bin/env bash
# Run 164 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the GEMV and CudaBackend tests, then issue 5 item 2's
# dense decode with the GEMV store prefetch on and off (run164_list.txt); on
# an H200 also run 163's kernel tables (late 8k steps, keys=cached against
# dense) and the OPT-66B sparse MLP at the automatic cluster size, 8 and 12.
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
dynsparse_cupti_trace cuda_gemv_test cuda_backend_test"
RUN_LIST=results/bench/run164_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv|CudaBackendTest" bash results/bench/device_run.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  KT_LIST=results/bench/run163_trace.txt bash results/profile/kernel_time.sh \
    >>"$OUT/run.log" 2>&1
  bash results/bench/sparse_mlp_ab.sh 1 "0 8 12" OPT-66B
fi
cd "$OUT" && tar czf logs.tgz build.log parity.log ctest.log 2>/dev/null
rm -f build.log parity.log ctest.log ptxas_gemv.txt
exit 0
