#!/usr/bin/env bash
# Run 165 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on an H200 only: run163.sh with run165_list.txt (issue 5
# item 2 with the GEMV store prefetch on and off) in place of its own list,
# so the same call also gives the OPT-66B sparse MLP's cluster sizes (issue
# 6 item 3) and the kernel tables of late 8k steps (issue 7 item 3). No
# tests: run 164 ran the GEMV and backend tests on this code.
RUN163_LIST=results/bench/run165_list.txt bash results/bench/run163.sh
