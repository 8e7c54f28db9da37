#!/usr/bin/env bash
# Run 142 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: decode attention of 2-8 rows sharing each chunk's K/V
# loads (attention_decode_rows.cu; DYNSPARSE_CUDA_DECODE_ROWS=0 for a block
# per row), after run 141 showed a late 16k keys=cached layer's attention at
# ~156 us against 119 for one row. Run 141's heads-innermost grid and staged
# key lists are removed; its probe kernels stay. Trimmed to the device time
# left: the attention and token-op CUDA tests, the decode attention kernel
# benchmarks, issue 7 item 3 at 4k and 16k (run142_list.txt); with
# RUN142_TRACE=1 also the kernel table of late keys=cached steps at 16k
# (run142_trace.txt).
RUN_LIST=results/bench/run142_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Attention|TokenOps --timeout 300" \
  RUN_KERNEL_BENCH="attention/decode" \
  bash results/bench/device_run.sh
if [[ "${RUN142_TRACE:-0}" == 1 ]]; then
  KT_LIST=results/bench/run142_trace.txt bash results/profile/kernel_time.sh \
    >>"$OUT/run.log" 2>&1
fi
