#!/usr/bin/env bash
# Run 132 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: where the fused decode attention's ~7 us a layer go. A
# temporary build (DS_EXPERIMENT in attention.cu, not on main) stamps the
# global timer in each block of the last attention launch of a process
# (entry, K/V loads issued, PDL wait over, new row read and rotated, chunk
# computed, partial written, cluster sync, block 0's merge, end) and writes
# them at exit. Decode of Llama-2-7B and OPT-6.7B, 16 new tokens, each
# setting three times; Llama-2-7B also with the GEMVs' early loads off
# (no o-projection loads in flight during the attention).
export DS_CUDA_TARGETS="dynsparse-bench cuda_graph_ops_test" \
  DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_BENCH=1 DS_CUDA_SKIP_PLANS=1 \
  DS_CUDA_CTEST_ARGS="-R GraphOps"
bash kernels/cuda/run_on_gpu.sh >"$OUT/run.log" 2>&1
echo "run_on_gpu.sh exit $?" >>"$OUT/run.log"
bench=build-cuda-gpu/dynsparse-bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/stamps"
for i in 1 2 3; do
  for spec in "llama:--model random:llama-2-7b" "opt:--model random:opt-6.7b" \
      "llama_late:DYNSPARSE_CUDA_EARLY_LOADS=0 --model random:llama-2-7b"; do
    name="${spec%%:*}"
    read -ra words <<<"${spec#*:}"
    assigns=()
    while [[ "${words[0]}" == *=* && "${words[0]}" != -* ]]; do
      assigns+=("${words[0]}")
      words=("${words[@]:1}")
    done
    env "${assigns[@]}" DS_EXPERIMENT_ATTN_STAMPS="$OUT/stamps/${name}_$i.csv" \
      timeout 120 "$bench" "${words[@]}" --device cuda --dtype f16 \
      --prompt 128 --new 16 --repeats 1 --json >>"$OUT/stamps/bench.jsonl" \
      2>>"$OUT/stamps/bench.log"
    echo "$name $i: rc $?" >>"$OUT/run.log"
  done
done
tar czf "$OUT/stamps.tgz" -C "$OUT" stamps && rm -rf "$OUT/stamps"
exit 0
