#!/usr/bin/env bash
# Run 123 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the decode attention's cluster merge and early K/V loads on by default (7393ced, this commit).
# Every CUDA test but the model-sized ones (ctest -L cuda -E ModelSized),
# compute-sanitizer memcheck of the attention tests (the cluster kernel's
# distributed shared memory reads), and run123_list.txt: issue 5's dense
# decode (Llama-2-7B, OPT-6.7B), issue 6's decode (OPT-66B dense and DejaVu,
# Llama-2-7B DejaVu) at the new default.
RUN_LIST=results/bench/run123_list.txt RUN_NCU=0 \
  RUN_CTEST="-E ModelSized" RUN_SANITIZE_TESTS="cuda_attention_test" \
  bash results/bench/device_run.sh
exit 0
