#!/usr/bin/env bash
# Run 133 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the fused decode attention after run 132's stamps. Its
# blocks push their partials into block 0's shared memory (st.async on an
# mbarrier) instead of two cluster.sync() and remote reads, and without a key
# list issue their K/V loads before the row's position arrives. Still the
# stamped build of run 132 (temporary, not on main). The attention, backend,
# fused-op and switch CUDA tests, then run 132's stamps and decodes.
export DS_CUDA_TARGETS="dynsparse-bench cuda_attention_test cuda_backend_test cuda_fused_ops_test cuda_graph_ops_test" \
  DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_BENCH=1 DS_CUDA_SKIP_PLANS=1 \
  DS_CUDA_CTEST_ARGS="-R Attention|CudaBackend|FusedOps|GraphOps"
bash kernels/cuda/run_on_gpu.sh >"$OUT/run.log" 2>&1
echo "run_on_gpu.sh exit $?" >>"$OUT/run.log"
bench=build-cuda-gpu/dynsparse-bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/stamps"
for i in 1 2 3; do
  for spec in "llama:--model random:llama-2-7b" "opt:--model random:opt-6.7b"; do
    name="${spec%%:*}"
    read -ra words <<<"${spec#*:}"
    DS_EXPERIMENT_ATTN_STAMPS="$OUT/stamps/${name}_$i.csv" \
      timeout 120 "$bench" "${words[@]}" --device cuda --dtype f16 \
      --prompt 128 --new 128 --repeats 2 --json >>"$OUT/stamps/bench.jsonl" \
      2>>"$OUT/stamps/bench.log"
    echo "$name $i: rc $?" >>"$OUT/run.log"
  done
done
tar czf "$OUT/stamps.tgz" -C "$OUT" stamps && rm -rf "$OUT/stamps"
exit 0
