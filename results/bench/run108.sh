#!/usr/bin/env bash
# Run 108 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test but the model-sized ones (the new
# SparseOpsTest.FusedMlpLaunchPicksTheClusterSize and the fused MLP at
# clusters of 16, 8 and 4 among them), run108_list.txt's decode (OPT-66B and
# Llama-2-7B, dense and DejaVu with the automatic cluster size and with
# clusters of 16), and the sparse MLP kernel benchmark at --cluster 0 (the
# automatic choice), 16 and 8, alternated twice, with --timeline. The MLP
# outputs come back in mlp.tgz.
RUN_LIST=results/bench/run108_list.txt RUN_NCU=0 \
  RUN_CTEST="-E ModelSized" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 2 "0 16 8" OPT-66B OPT-175B OPT-30B OPT-13B Llama-2-7B
exit 0
