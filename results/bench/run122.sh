#!/usr/bin/env bash
# Run 122 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the fused decode attention loading its cached keys and
# values before its PDL wait (DYNSPARSE_CUDA_EARLY_KV=1, attention.h
# early_kv_loads) against prefetching them into L2 only. The attention, switch
# and whole-backend CUDA tests (EverySwitch runs EARLY_KV=1 under CUDA graphs
# and PDL), and run122_list.txt's dense decode of Llama-2-7B and OPT-6.7B with
# the switch off and on, alternated twice.
RUN_LIST=results/bench/run122_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Attention|CudaSwitches|CudaBackend|Pipelined" \
  bash results/bench/device_run.sh
exit 0
