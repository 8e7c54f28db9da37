#!/usr/bin/env bash
# Run 119 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the decode attention's key chunks merged in a cluster
# through distributed shared memory (DYNSPARSE_CUDA_ATTENTION_CLUSTER=1,
# attention.h cluster_merge) against the merge through global memory and a
# counter. The attention tests (the cluster kernel against the CPU) and the
# switch tests, run119_list.txt's dense decode of Llama-2-7B and OPT-6.7B at
# prompt 128 (a 256-row cache: 4 chunks) with the switch off and on,
# alternated twice, Llama-2-7B at prompt 384 (512 rows: 8 chunks), and the
# kernel timeline of a Llama-2-7B step with the switch on (trace.tgz; run
# 118's trace_off.tgz is the same step with it off).
RUN_LIST=results/bench/run119_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Attention|CudaSwitches|EverySwitch" bash results/bench/device_run.sh
DYNSPARSE_CUDA_ATTENTION_CLUSTER=1 TRACE_LIST=results/bench/run118_trace.txt \
  bash results/profile/trace_decode.sh >>"$OUT/run.log" 2>&1
exit 0
