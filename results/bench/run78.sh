#!/usr/bin/env bash
# Run 78 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the whole CUDA suite with q/k/v and up/gate of a few
# hundred rows as one batched GEMM each (cuda::LinearBatched), then
# run78_list.txt (issue 7 item 3 at 4k and 16k, both lazyllm keys settings).
RUN_LIST=results/bench/run78_list.txt RUN_NCU=0 bash results/bench/device_run.sh
