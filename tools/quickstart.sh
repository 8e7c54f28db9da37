#!/usr/bin/env bash
# Builds dynsparse and runs the main job on the embedded default model.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bash "$repo/tools/build.sh"
model="$repo/tests/fixtures/models/tiny-llama-chat"
"$repo/build/dynsparse" inspect --model "$model"
"$repo/build/dynsparse" generate --model "$model" \
  --prompt "Once upon a time" --max-new 32 --greedy
