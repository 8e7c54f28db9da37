#!/usr/bin/env bash
# Run 136 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the revived rows' attention (pipelined_attention.cu) with
# per-warp causal skipping, exp2 softmax and 64-key f16 stages at 64-row
# tiles. Every CUDA test but the model-sized ones (CudaBackend, the
# attention kernels and the GEMV were also split into files by purpose,
# 5989e34 .. 9335f08, without a GPU), the pipelined attention kernel benchmarks,
# run136_list.txt (issue 7 item 3, keys=cached at 4k/8k/16k against dense)
# and the kernel tables of run136_trace.txt's eager steps.
RUN_LIST=results/bench/run136_list.txt RUN_NCU=0 \
  RUN_KERNEL_BENCH='attention/(pipelined|decode)' \
  RUN_CTEST="-E ModelSized --timeout 300" \
  bash results/bench/device_run.sh
KT_LIST=results/bench/run136_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
