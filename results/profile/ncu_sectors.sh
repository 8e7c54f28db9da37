#!/usr/bin/env bash
# Do the padded K/V stages of the flash prefill and of the revived rows'
# attention split their cp.async copies? Their rows are D + 8 halves apart
# in shared memory, so every other row's copies land 16 bytes off a 32-byte
# boundary: the condition that made the fused sparse MLP request every
# weight sector twice (results/bench/h200_run98). Nsight Compute's memory
# sections and per-instruction sector counts of one FlashPrefillKernel
# launch (Llama-2-7B, 2048-token prompt) and one PipelinedSplitKernel launch
# (a lazyllm keys=cached decode step with revived rows, 4096-token prompt);
# read `L2 Theoretical Sectors Global (Excessive)` of the LDGSTS lines.
# Run from the repository root on the GPU machine after run_on_gpu.sh built
# dynsparse-bench (build-cuda-gpu/); writes $OUT/ncu_sectors_{flash,split}.*
# (NCU_SECTORS_SASS=0: the sections only, no per-instruction CSV).
set -uo pipefail
bench=build-cuda-gpu/dynsparse-bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis
          --section MemoryWorkloadAnalysis_Tables --section SourceCounters)
prof() {  # name kernel-regex skip bench-args...
  local name="$1" kernel="$2" skip="$3"
  shift 3
  timeout 200 ncu --clock-control none --kernel-name "regex:$kernel" \
    --launch-skip "$skip" --launch-count 1 "${sections[@]}" \
    "$bench" "$@" >"$OUT/ncu_sectors_$name.txt" 2>&1
  echo "ncu $name -> rc $?"
  [[ "${NCU_SECTORS_SASS:-1}" == 1 ]] || return 0
  timeout 200 ncu --clock-control none --kernel-name "regex:$kernel" \
    --launch-skip "$skip" --launch-count 1 --section SourceCounters \
    --page source --csv --print-source sass "$bench" "$@" \
    >"$OUT/ncu_sectors_$name.csv" 2>&1
  gzip -f "$OUT/ncu_sectors_$name.csv"
}
prof flash FlashPrefillKernel 8 --model random:llama-2-7b --device cuda \
  --dtype f16 --prompt 2048 --new 2 --repeats 1 --no-cuda-graphs
prof split PipelinedSplitKernel 4 --model random:llama-2-7b --device cuda \
  --dtype f16 --prompt 4096 --new 4 --repeats 1 --method lazyllm \
  --method-arg stages=4 --method-arg keep=0.25 --method-arg keys=cached
