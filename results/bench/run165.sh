#!/usr/bin/env bash
# Run 165 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on an H200 only (elsewhere it prints the card and stops):
# issue 5 item 2 with the GEMV store prefetch on and off (run165_list.txt),
# the OPT-66B sparse MLP at the automatic cluster size, 8 and 12 (issue 6
# item 3), then run 163's kernel tables of late 8k decode steps,
# keys=cached against dense (issue 7 item 3). No tests: run 164 ran the
# GEMV and backend tests on this code.
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "not an H200, skipped:"
  nvidia-smi -L
  exit 0
fi
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
dynsparse_cupti_trace"
RUN_LIST=results/bench/run165_list.txt RUN_NCU=0 \
  RUN_CTEST="-R NoTestHasThisName" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 1 "0 8 12" OPT-66B
KT_LIST=results/bench/run163_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
cd "$OUT" && tar czf logs.tgz build.log parity.log ctest.log 2>/dev/null
rm -f build.log parity.log ctest.log ptxas_gemv.txt
exit 0
