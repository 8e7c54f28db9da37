#!/usr/bin/env bash
# Run 97 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test (-E ModelSized), the sparse MLP kernel
# benchmark on the OPT-66B / OPT-175B shapes (3 runs), and Nsight Compute's
# full set with SASS-level stall samples for one FusedSparseMlpKernel launch
# at OPT-66B keep 0.1 (issue 6: 80% of copy bandwidth, target 85%).
RUN_LIST=results/bench/run97_list.txt RUN_NCU=0 \
  bash results/bench/device_run.sh
bench=build-cuda-gpu/kernels/cuda/dynsparse_sparse_mlp_bench
[[ -x "$bench" ]] || bench=build-cuda-gpu/kernels_cuda/dynsparse_sparse_mlp_bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
for i in 1 2 3; do
  timeout 60 "$bench" --shape OPT-66B --shape OPT-175B \
    >>"$OUT/sparse_mlp.jsonl" 2>>"$OUT/sparse_mlp.log"
  echo "run $i: rc $?" >>"$OUT/sparse_mlp.log"
done
ncu_args=(--clock-control none --kernel-name regex:FusedSparseMlpKernel
          --launch-skip 2 --launch-count 1 --set full --import-source no)
timeout 150 ncu "${ncu_args[@]}" "$bench" --shape OPT-66B --iters 3 \
  >"$OUT/ncu_fused_mlp.txt" 2>&1
echo "ncu details rc $?" >>"$OUT/sparse_mlp.log"
timeout 150 ncu "${ncu_args[@]}" --page source --csv --print-source sass \
  "$bench" --shape OPT-66B --iters 3 >"$OUT/ncu_fused_mlp_sass.csv" 2>&1
echo "ncu sass rc $?" >>"$OUT/sparse_mlp.log"
gzip -f "$OUT/ncu_fused_mlp_sass.csv"
exit 0
