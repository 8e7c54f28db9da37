#!/usr/bin/env bash
# Run 83 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: ctest -R TokenOps after lazyllm's selection became a
# threshold pass (no sort, no index indirection), run83_list.txt (issue 7
# item 3 at 4k, 8k and 16k), then profiles the host side of lazyllm
# keys=cached decode at 4k with perf when the machine has it
# ($OUT/perf_self.txt, perf_children.txt: self and inclusive time by
# function), else records the API calls (host_gaps.py, $OUT/host_gaps.md).
RUN_LIST=results/bench/run83_list.txt RUN_NCU=0 \
  RUN_CTEST="-R TokenOps --timeout 200" bash results/bench/device_run.sh
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
args=(--model random:llama-2-7b --device cuda --dtype f16 --prompt 4096
      --new 96 --repeats 1 --method lazyllm --method-arg stages=4
      --method-arg keep=0.25 --method-arg keys=cached --json)
bench=build-cuda-gpu/dynsparse-bench
if command -v perf >/dev/null; then
  perf record -F 4000 -g -o /tmp/perf.data "$bench" "${args[@]}" \
    >"$OUT/perf_bench.log" 2>&1
  perf report -i /tmp/perf.data --no-children --sort symbol -g none \
    2>/dev/null | head -120 >"$OUT/perf_self.txt"
  perf report -i /tmp/perf.data --children --sort symbol -g none \
    2>/dev/null | head -200 >"$OUT/perf_children.txt"
else
  echo "no perf on this machine: API trace instead" >>"$OUT/run.log"
  CUDA_INJECTION64_PATH="$PWD/build-cuda-gpu/cupti_trace/libdynsparse_cupti_trace.so" \
    DYNSPARSE_TRACE_API=1 DYNSPARSE_TRACE_OUT=/tmp/api.csv \
    timeout 200 "$bench" "${args[@]}" >"$OUT/api_bench.log" 2>&1
  python3 tools/cupti_trace/host_gaps.py /tmp/api.csv --from-fraction 0.5 \
    --top 60 >"$OUT/host_gaps.md" 2>&1
fi
