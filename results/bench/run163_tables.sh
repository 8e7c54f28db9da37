#!/usr/bin/env bash
# Run 163's measurements, after device_run.sh built dynsparse-bench,
# dynsparse_sparse_mlp_bench and the CUPTI recorder (GPU machine, from the
# repository root): the kernel tables of late 8k decode steps, keys=cached
# against dense (run163_trace.txt, issue 7 item 3), then the OPT-66B sparse
# MLP at the automatic cluster size, 8 and 12 (issue 6 item 3).
KT_LIST=results/bench/run163_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
bash results/bench/sparse_mlp_ab.sh 1 "0 8 12" OPT-66B
