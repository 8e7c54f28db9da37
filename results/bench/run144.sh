#!/usr/bin/env bash
# Run 144 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root. Run 143 (H100) put one dense decode row over 16k f16 keys
# at 97 us on the pipelined tensor-core kernel against 120 us on the decode
# kernel, and LazyLLM keys=cached at 1.06-1.08x dense with every keyed
# attention on tensor cores (TC_KEYED_ATTENTION_ROWS=1). This run times
# dense decode with its long-cache attention moved there too
# (DYNSPARSE_CUDA_TC_DECODE_KEYS=4096) and LazyLLM against that dense
# (run144_list.txt); the CUDA backend, attention and token-op tests (the new
# TensorCoreDecodeAttentionMatchesDecodeKernel among them); the one-row
# kernel benchmarks at 1k-16k keys for the threshold.
RUN_LIST=results/bench/run144_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Attention|TokenOps|CudaBackend|CudaSwitches --timeout 300" \
  RUN_KERNEL_BENCH="attention/(decode|pipelined)/rows1/" \
  bash results/bench/device_run.sh
