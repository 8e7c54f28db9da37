#!/usr/bin/env bash
# Run 90 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: OPT-66B dense and DejaVu decode on f16 against f32 KV
# caches (run90_list.txt); no tests (run 89 ran the suite on this code).
RUN_LIST=results/bench/run90_list.txt RUN_NCU=0 \
  RUN_CTEST="-R DeviceContext" bash results/bench/device_run.sh
