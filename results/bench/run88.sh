#!/usr/bin/env bash
# Run 88 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: an f16 cache's decode attention in 128-key chunks (16 keys
# a warp, held as f16 pairs) above 2048 cache rows. The attention, token,
# backend and fused-op tests, the attention kernel benchmarks, and
# run88_list.txt (issue 7 item 3 at 4k/8k/16k on f16 caches; f32 A/B).
RUN_LIST=results/bench/run88_list.txt RUN_NCU=0 RUN_KERNEL_BENCH=attention \
  RUN_CTEST="-R Attention|TokenOps|CudaBackend|FusedOps|DecodeStack --timeout 300" \
  bash results/bench/device_run.sh
