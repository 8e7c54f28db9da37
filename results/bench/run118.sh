#!/usr/bin/env bash
# Run 118 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the decode GEMVs' first wave asking L2 for the later
# waves' weights while it waits (DYNSPARSE_CUDA_GEMV_L2_AHEAD, gemv.h
# l2_ahead). The GEMV tests and the fused decode tests at the default, the
# fused decode and backend tests again with every GEMV asking ahead (2),
# run118_list.txt's dense decode of Llama-2-7B and OPT-6.7B at 0, 1 and 2
# (alternated twice), and the kernel timelines of a Llama-2-7B step at 0 and 1
# (trace_off.tgz, trace_on.tgz).
RUN_LIST=results/bench/run118_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv|FusedOps|CudaSwitches" bash results/bench/device_run.sh
build=build-cuda-gpu
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
(cd "$build" && DYNSPARSE_CUDA_GEMV_L2_AHEAD=2 timeout 300 ctest -L cuda \
  -R "FusedOps|CudaBackend" --output-on-failure -j4) >"$OUT/ctest_ahead2.log" 2>&1
echo "ctest with GEMV_L2_AHEAD=2 exit $?" >>"$OUT/run.log"
TRACE_LIST=results/bench/run118_trace.txt bash results/profile/trace_decode.sh \
  >>"$OUT/run.log" 2>&1
mv "$OUT/trace.tgz" "$OUT/trace_off.tgz"
DYNSPARSE_CUDA_GEMV_L2_AHEAD=1 TRACE_LIST=results/bench/run118_trace.txt \
  bash results/profile/trace_decode.sh >>"$OUT/run.log" 2>&1
mv "$OUT/trace.tgz" "$OUT/trace_on.tgz"
exit 0
