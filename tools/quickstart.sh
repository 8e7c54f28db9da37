#!/usr/bin/env bash
# Builds dynsparse, shows generation on the embedded default model,
# models/ref-llama (a 15.7M-parameter Llama-style model trained for dynsparse;
# see models/ref-llama/README.md), then runs the quickstart experiment.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bash "$repo/tools/build.sh"
model="$repo/models/ref-llama"
"$repo/build/dynsparse" inspect --model "$model"
"$repo/build/dynsparse" generate --model "$model" \
  --prompt "It is a truth universally acknowledged" --max-new 48 \
  --temperature 0.7 --top-p 0.9 --seed 1
# In-context retrieval: the answer is only in the prompt's first line.
"$repo/build/dynsparse" generate --model "$model" --max-new 6 --greedy \
  --prompt $'The pass key is 52817. Remember it. 52817 is the pass key.\nThe grass is green. The sky is blue. It was the best of times, it was the worst of times.\nWhat is the pass key? The pass key is'
# The main job: the quickstart experiment (perplexity, zero-shot, latency on
# both reference models; about 3 minutes on 2 cores). It reads the shared
# evaluation data; re-running resumes and skips finished results.
if [[ -z "${DYNSPARSE_DATA:-}" && -d "$repo/../shared/data" ]]; then
  export DYNSPARSE_DATA="$(cd "$repo/../shared/data" && pwd)"
fi
if [[ -z "${DYNSPARSE_DATA:-}" ]]; then
  echo "quickstart: set DYNSPARSE_DATA to the shared data folder to run" \
    "configs/quickstart.yaml" >&2
  exit 0
fi
cd "$repo"
build/dynsparse run configs/quickstart.yaml --out build/quickstart
echo "quickstart: tables and plots in build/quickstart/ (report.md, *.svg)" >&2
