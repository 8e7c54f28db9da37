#!/usr/bin/env bash
# Run 110 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test but the model-sized ones (gated MLPs now
# try clusters of 16 first), run110_list.txt's Llama-2-7B decode (dense, and
# DejaVu at the automatic cluster size and at 8, alternated), and the sparse
# MLP kernel benchmark at --cluster 0 with --timeline. The MLP outputs come
# back in mlp.tgz.
RUN_LIST=results/bench/run110_list.txt RUN_NCU=0 \
  RUN_CTEST="-E ModelSized" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 1 "0" OPT-66B OPT-175B OPT-30B OPT-13B Llama-2-7B
exit 0
