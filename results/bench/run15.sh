#!/usr/bin/env bash
# Run 15 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the whole CUDA suite, memcheck of the backend and
# attention tests, the benchmarks of run15_list.txt.
RUN_LIST=results/bench/run15_list.txt RUN_CTEST="-E ModelSized" \
  RUN_SANITIZE_TESTS="cuda_backend_test cuda_norms_test" RUN_NCU=0 \
  exec bash results/bench/device_run.sh
