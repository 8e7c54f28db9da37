#!/usr/bin/env bash
# Per-kernel durations of OPT-66B-shaped decode steps, dense and DejaVu at
# issue 6's settings, on an 8-layer model of OPT-66B's layer shape
# (opt-66b-8-layers/config.json: every layer kernel of the real model, 1/8
# of its weights, so Nsight Compute profiles every launch in minutes).
# Layer 0 keeps its heads and layer 7 its MLP dense, as the first 5 / last 10
# of the 64 real layers. Run from the repository root on the GPU machine after
# run_on_gpu.sh built dynsparse-bench (build-cuda-gpu/); writes
# $OUT/ncu_dejavu_{dense,sparse}.csv (one row per kernel, eager steps).
set -uo pipefail
bench=build-cuda-gpu/dynsparse-bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
model=random:results/profile/opt-66b-8-layers/config.json
common=(--model "$model" --device cuda --dtype f16 --prompt 128 --new 3
        --repeats 1 --no-cuda-graphs)
dejavu=(--method dejavu --method-arg mlp_keep=0.1 --method-arg dense_last_mlp=1
        --method-arg head_keep=0.5 --method-arg dense_first_heads=1
        --method-arg predictors=random:1000)
prof() {  # out_file bench-args...
  local out="$1"
  shift
  timeout 240 ncu --clock-control none --metrics gpu__time_duration.sum \
    --csv --page raw "$bench" "$@" >"$out" 2>/tmp/ncu.err
  echo "ncu $* -> rc $? $(wc -l <"$out") lines"
  tail -n 5 /tmp/ncu.err
}
start=$SECONDS
prof "$OUT/ncu_dejavu_dense.csv" "${common[@]}"
prof "$OUT/ncu_dejavu_sparse.csv" "${common[@]}" "${dejavu[@]}"
echo "profiling took $((SECONDS - start)) s"
