#!/usr/bin/env bash
# Run 143 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root. Written 2026-12-05, not run (the session's device time was
# spent on runs 141-142). Run 142's kernel benchmarks put 2 / 4 / 8 keyed rows
# over 16k f16 keys at 211 / 410 / 805 us on the split-K decode kernel (a
# block per row) and run 136's put 16 rows at 79.5 us on the pipelined
# tensor-core kernel, so a decode step's few revived rows may be far cheaper
# there: DYNSPARSE_CUDA_TC_KEYED_ATTENTION_ROWS=2 (and =1, the keyed new row
# too) against the default 9 (run143_list.txt). Also the attention and
# token-op CUDA tests (a CUDA session with every keyed attention on tensor
# cores), the decode and pipelined kernel benchmarks for 1-8 rows, and the
# kernel table of late keys=cached steps at 16k (run143_trace.txt) under
# RUN143_TRACE_ROWS (unset: the default 9).
RUN_LIST=results/bench/run143_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Attention|TokenOps --timeout 300" \
  RUN_KERNEL_BENCH="attention/(decode|pipelined/rows[1248]/)" \
  bash results/bench/device_run.sh
env ${RUN143_TRACE_ROWS:+DYNSPARSE_CUDA_TC_KEYED_ATTENTION_ROWS=$RUN143_TRACE_ROWS} \
  KT_LIST=results/bench/run143_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
