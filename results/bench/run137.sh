#!/usr/bin/env bash
# Run 137 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: issue 7 item 3 with the default keys (keys=selected) after
# run 136's changes to the revived rows' attention, beside dense on the same
# machine (run137_list.txt). Only the token tests run (run 136 ran them all).
RUN_LIST=results/bench/run137_list.txt RUN_NCU=0 \
  RUN_CTEST="-R TokenOps|PipelinedSplit --timeout 300" \
  bash results/bench/device_run.sh
