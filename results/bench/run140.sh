#!/usr/bin/env bash
# Run 140 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: this stop's final tree (LazyLLM's next-layer probe started
# before the attention; run 139's masked decode attention removed). The
# attention, token-op and backend CUDA tests, issue 7 item 3 at 4k / 8k /
# 16k (run140_list.txt), and the kernel table of late keys=cached steps at
# 16k with the key list (run140_trace.txt; against run 138's, before the
# probe moved, and run 139's, with the mask). Written 2026-12-05, not run:
# no device was lent after run 139.
RUN_LIST=results/bench/run140_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Attention|TokenOps|CudaBackend --timeout 300" \
  bash results/bench/device_run.sh
KT_LIST=results/bench/run140_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
