#!/usr/bin/env bash
# Run 60 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op CUDA tests at HEAD (after the staging-size
# refactor), then issue 7 item 4's dense / dejavu / lazyllm / combined table
# (Llama-2-7B, 4096 + 256, greedy decode).
RUN_LIST=results/bench/run60_list.txt RUN_CTEST="-R SparseOps|Pipelined" \
  RUN_NCU=0 bash results/bench/device_run.sh
