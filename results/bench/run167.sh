#!/usr/bin/env bash
# Run 167 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the GEMV tests (with DYNSPARSE_CUDA_WAVE_SPLITS=1 too),
# then run167_list.txt (the tensor-core GEMV's wave-filling K splits on and
# off); on an H200 also run165_list.txt (issue 5 item 2 with the GEMV store
# prefetch on and off).
export DS_CUDA_TARGETS="dynsparse-bench cuda_gemv_test"
list=results/bench/run167_list.txt
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  list="$OUT/run167_h200_list.txt"
  cat results/bench/run167_list.txt results/bench/run165_list.txt >"$list"
fi
RUN_LIST="$list" RUN_NCU=0 RUN_CTEST="-R Gemv" bash results/bench/device_run.sh
rm -f "$OUT/run167_h200_list.txt"
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
(cd build-cuda-gpu && DYNSPARSE_CUDA_WAVE_SPLITS=1 ctest -L cuda -R Gemv \
  >"$OUT/ctest_wave_splits.log" 2>&1; echo "wave splits ctest rc $?" >>"$OUT/run.log")
tail -3 "$OUT/ctest_wave_splits.log" >>"$OUT/run.log"
cd "$OUT" && tar czf logs.tgz build.log parity.log ctest.log ctest_wave_splits.log \
  2>/dev/null
rm -f build.log parity.log ctest.log ctest_wave_splits.log ptxas_gemv.txt
exit 0
