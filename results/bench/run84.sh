#!/usr/bin/env bash
# Run 84 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the whole CUDA suite at the session's last code change
# (466a68c's code; later commits are records and docs), no benchmarks.
RUN_LIST=results/bench/run84_list.txt RUN_NCU=0 bash results/bench/device_run.sh
