#!/usr/bin/env bash
# Run 141 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the decode attention's grid walking the heads of a key
# chunk first (attention.h heads_innermost; DYNSPARSE_CUDA_DECODE_HEADS_INNER=0
# for the old order), keys=cached's key lists staged ahead of their layers
# (Backend::StageAhead) and prefetched before the PDL wait, and the probe's
# half-warp 16-byte loads with per-block softmax partials (no switch: against
# run 139). The attention, token-op and backend CUDA tests, the decode
# attention kernel benchmarks in both orders, issue 7 item 3 at 4k / 8k / 16k
# (run141_list.txt; run 140's list folded in), and kernel tables of late
# keys=cached and dense eager steps at 16k (run141_trace.txt).
RUN_LIST=results/bench/run141_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Attention|TokenOps|CudaBackend|CudaSwitches --timeout 300" \
  RUN_KERNEL_BENCH="attention/decode" \
  bash results/bench/device_run.sh
KT_LIST=results/bench/run141_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
