#!/usr/bin/env bash
# Run 126 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: which register bound each one-row GEMV input kind should
# take (a temporary DS_EXPERIMENT_GEMV_BLOCKS=norm,plain,product override in
# gemv.cu; 7 and 8 are blocks an SM, 0 the default). The GEMV and fused-op
# tests at the default and with every bound at 8 (the capped kernels spill a
# few bytes there), then run126_list.txt (bench.log names each line's
# setting; the JSON records DYNSPARSE_CUDA_ variables only).
RUN_LIST=results/bench/run126_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv|FusedOps|CudaSwitches" bash results/bench/device_run.sh
build=build-cuda-gpu
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
(cd "$build" && DS_EXPERIMENT_GEMV_BLOCKS=8,8,8 timeout 200 ctest -L cuda \
  -R "Gemv|FusedOps" --output-on-failure -j4) >"$OUT/ctest_888.log" 2>&1
echo "ctest with DS_EXPERIMENT_GEMV_BLOCKS=8,8,8 exit $?" >>"$OUT/run.log"
exit 0
