#!/usr/bin/env bash
# The one GPU command of the recipe (run through the device tool with
# carry=[".device_inputs/refmodels"]): trains ref-llama and ref-opt concurrently on one GPU,
# then evaluates both with transformers. Everything it keeps is under $OUT (8 files at most):
#   ref-llama/{config.json,model.safetensors,meta.json}, ref-opt/{...}, train.log, eval.json
# TRAIN_SECONDS caps the cosine schedule; TOTAL_SECONDS is the wall-clock point (from the start)
# by which training must end, so evaluation still fits inside the device tool's 10 minutes.
set -uo pipefail
export PYTHONUNBUFFERED=1
repo="$(cd "$(dirname "$0")/../.." && pwd)"
data="$repo/.device_inputs/refmodels"
work=/tmp/refmodels_work
out="${OUT:?set OUT}"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/train.log"
python3 "$repo/tools/reference_models/train.py" --data "$data" --out "$out" --work "$work" \
  --train-seconds "${TRAIN_SECONDS:-380}" --total-seconds "${TOTAL_SECONDS:-440}" --compile \
  2>&1 | grep --line-buffered -v "Writing model shards" | tee -a "$out/train.log"
python3 "$repo/tools/reference_models/evaluate.py" --models "$out/ref-llama,$out/ref-opt" \
  --data "$data" --work "$work" --eval-data "$data/eval" \
  --cloze "$repo/datasets/refcloze/refcloze.jsonl" --trials "${PASSKEY_TRIALS:-4}" \
  --out "$out/eval.json" 2>&1 | tee -a "$out/train.log"
