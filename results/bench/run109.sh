#!/usr/bin/env bash
# Run 109 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run 108 again for clusters of 16, which its build never
# launched (a forced size outside 8 and 4 fell back to the two gathers): the
# sparse-op CUDA tests, run109_list.txt's OPT-66B DejaVu decode with the
# automatic cluster size and with clusters of 16, and the sparse MLP kernel
# benchmark at --cluster 16 and 8, alternated twice, with --timeline.
RUN_LIST=results/bench/run109_list.txt RUN_NCU=0 \
  RUN_CTEST="-R SparseOps" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 2 "16 8" OPT-66B OPT-175B OPT-30B OPT-13B Llama-2-7B
exit 0
