#!/usr/bin/env bash
# The one GPU command of the recipe (run through the device tool with
# carry=[".device_inputs/refmodels"]): trains ref-llama and ref-opt concurrently on one GPU,
# then evaluates both with transformers.
# The device tool returns at most 8 files of at most 16 MiB, and each fp16 model is ~30 MB, so
# everything (ref-llama/, ref-opt/, train.log, eval.json) is packed into one tar and split into
# 15 MB parts: $OUT/refmodels.tar.00, .01, ... Unpack here with
#   cat refmodels.tar.* | tar -x -C DEST
# TRAIN_SECONDS caps the cosine schedule; TOTAL_SECONDS is the wall-clock point (from the start)
# by which training must end; EVAL_SECONDS bounds evaluation, so the packing always runs
# inside the tool's 10 minutes.
set -uo pipefail
export PYTHONUNBUFFERED=1
repo="$(cd "$(dirname "$0")/../.." && pwd)"
data="$repo/.device_inputs/refmodels"
work=/tmp/refmodels_work
res="$work/out"
out="${OUT:?set OUT}"
mkdir -p "$res"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$res/train.log"
python3 "$repo/tools/reference_models/train.py" --data "$data" --out "$res" --work "$work" \
  --train-seconds "${TRAIN_SECONDS:-380}" --total-seconds "${TOTAL_SECONDS:-440}" --compile \
  2>&1 | grep --line-buffered -v "Writing model shards" | tee -a "$res/train.log"
for m in ref-llama ref-opt; do cp "$data/tokenizer.json" "$data/tokenizer_config.json" "$res/$m/"; done
timeout "${EVAL_SECONDS:-110}" python3 "$repo/tools/reference_models/evaluate.py" \
  --models "$res/ref-llama,$res/ref-opt" --data "$data" --work "$work" --eval-data "$data/eval" \
  --cloze "$repo/datasets/refcloze/refcloze.jsonl" --trials "${PASSKEY_TRIALS:-4}" \
  --out "$res/eval.json" 2>&1 | tee -a "$res/train.log"
tar -C "$res" -cf - . | split -b 15000000 -d - "$out/refmodels.tar."
ls -l "$out"
