#!/usr/bin/env bash
# Run 186 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card: the tests of the in-launch merges whose
# counters ArrivesLast now resets itself (decode attention with the merge in
# the launch, keyed attention, the fused sparse MLP's split sum, each run
# twice on one set of counters), then run186_list.txt (dense decode at 4096
# tokens, whose attention merges in the launch).
export DS_CUDA_TARGETS="dynsparse-bench cuda_sparse_ops_test \
cuda_attention_test cuda_token_ops_test"
RUN_PACK_LOGS=1 RUN_LIST=results/bench/run186_list.txt RUN_CTEST="-R \
FusedMlpLaunchPicks|FusedSparseMlpMatches|AttentionTest.Matches|TokenOpsTest" \
  bash results/bench/device_run.sh
exit 0
