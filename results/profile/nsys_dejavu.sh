#!/usr/bin/env bash
# Kernel timeline of OPT-66B decode steps replayed as CUDA graphs (Nsight
# Systems, every graph node traced): what a DejaVu step costs inside the graph,
# with the gaps between kernels that the isolated ncu durations of
# ncu_dejavu.sh cannot show. Dense, then DejaVu at issue 6's settings.
# Run from the repository root on the GPU machine after run_on_gpu.sh built
# dynsparse-bench; writes $OUT/nsys_dejavu_{dense,sparse}.csv.gz (the
# cuda_gpu_trace report), tabled by nsys_step_table.py.
set -uo pipefail
bench=build-cuda-gpu/dynsparse-bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nsys=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -n 1)
if [[ -z "$nsys" ]]; then
  echo "nsys_dejavu: no nsys on this machine"
  exit 0
fi
common=(--model random:opt-66b --device cuda --dtype f16 --prompt 128 --new 6
        --repeats 1)
dejavu=(--method dejavu --method-arg mlp_keep=0.1 --method-arg dense_last_mlp=10
        --method-arg head_keep=0.5 --method-arg dense_first_heads=5
        --method-arg predictors=random:1000)
trace() {  # name bench-args...
  local name="$1" rep=/tmp/nsys_$1
  shift
  timeout 200 "$nsys" profile --trace=cuda --cuda-graph-trace=node \
    --force-overwrite=true -o "$rep" "$bench" "$@" >/tmp/nsys_$name.log 2>&1
  echo "nsys $name -> rc $?"
  tail -n 3 /tmp/nsys_$name.log
  "$nsys" stats --report cuda_gpu_trace --format csv --force-export=true \
    --output "/tmp/nsys_${name}" "$rep.nsys-rep" >/dev/null 2>&1
  gzip -c /tmp/nsys_${name}_cuda_gpu_trace.csv >"$OUT/nsys_dejavu_$name.csv.gz"
  echo "nsys $name -> $(zcat "$OUT/nsys_dejavu_$name.csv.gz" | wc -l) rows"
}
trace dense "${common[@]}"
trace sparse "${common[@]}" "${dejavu[@]}"
