#!/usr/bin/env bash
# The token path's decode speed on the CPU (ref-llama, 1024-token prompt +
# 128 greedy tokens): dense, lazyllm (stages=4 keep=0.25) and its
# keys=cached ablation, one JSON row each, appended to $1.
#   bash results/lazyllm/cpu_decode/run.sh results/lazyllm/cpu_decode/NAME.jsonl
set -euo pipefail
out="$1"
lazy=(--method lazyllm --method-arg stages=4 --method-arg keep=0.25)
for extra in "" "${lazy[*]}" "${lazy[*]} --method-arg keys=cached"; do
  # shellcheck disable=SC2086  # the extra arguments are a word list
  build/dynsparse bench --model models/ref-llama --device cpu --prompt 1024 \
    --new 128 --repeats 1 $extra --json 2>/dev/null >>"$out"
done
