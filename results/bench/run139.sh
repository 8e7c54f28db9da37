#!/usr/bin/env bash
# Run 139 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: LazyLLM's decode attention over a key list holding >= 7/8
# of the rows read in place under a byte mask (attention.h key_mask), and
# the next layer's probe started before the attention instead of after it
# (no switch: its effect is run 138's idle time against this run's). The
# attention, token-op and backend CUDA tests (the keyed attention test
# checks the mask over NaN rows, the pruned session drops a tenth of the
# tokens in every step), issue 7 item 3 at 4k / 8k / 16k with the mask and
# at 4k / 16k without it (run139_list.txt, with the host-only token profile
# of keys=cached at 16k), and the kernel table of late keys=cached steps at
# 16k (run139_trace.txt; run 138 has the others).
RUN_LIST=results/bench/run139_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Attention|TokenOps|CudaBackend --timeout 300" \
  bash results/bench/device_run.sh
KT_LIST=results/bench/run139_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
