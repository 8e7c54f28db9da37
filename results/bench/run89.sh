#!/usr/bin/env bash
# Run 89 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the session's final code. The whole CUDA suite, and
# run89_list.txt (OPT-66B dense and DejaVu decode on f16 caches; Llama-2-7B
# dense at prompt 128 on f16 and f32 caches).
RUN_LIST=results/bench/run89_list.txt RUN_NCU=0 \
  RUN_CTEST="-E ModelSized --timeout 300" bash results/bench/device_run.sh
