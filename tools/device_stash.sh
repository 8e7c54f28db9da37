#!/usr/bin/env bash
# The device tool sends the working tree (tracked + untracked-not-ignored
# files) and refuses trees over 64 MiB; the reference models' weights alone
# are 58 MiB. Before a device run, `tools/device_stash.sh out` moves them into
# the git-ignored .device_stash/ (carry `.device_stash/ref-llama` when the run
# needs one model: ~22 MiB of tree + 30 MiB fits); afterwards
# `tools/device_stash.sh in` puts them back (same filesystem: a rename, so
# readers that already opened a file are unaffected). The committed DejaVu
# predictors of the reference models (results/dejavu/predictors, ~12 MiB; the
# GPU runs use random:D predictors) travel the same way, and so do the
# recorded bench runs (results/bench/<card>_runNNN/, ~18 MiB that no run reads):
# with build_cuda_deps carried, the tree is otherwise at the limit.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
stash="$repo/.device_stash"
case "${1:-}" in
  out)
    for dir in "$repo"/models/*/; do
      name="$(basename "$dir")"
      [[ -f "$dir/model.safetensors" ]] || continue
      mkdir -p "$stash/$name"
      mv "$dir/model.safetensors" "$stash/$name/model.safetensors"
      # Everything else of the model folder, so a carried stash is loadable.
      cp "$dir"/*.json "$stash/$name/" 2>/dev/null || true
    done
    for file in "$repo"/results/dejavu/predictors/*/predictors.safetensors; do
      [[ -f "$file" ]] || continue
      name="$(basename "$(dirname "$file")")"
      mkdir -p "$stash/predictors/$name"
      mv "$file" "$stash/predictors/$name/"
    done
    for dir in "$repo"/results/bench/*_run*/; do
      [[ -d "$dir" ]] || continue
      mkdir -p "$stash/bench_runs"
      mv "$dir" "$stash/bench_runs/"
    done
    ;;
  in)
    for file in "$stash"/predictors/*/predictors.safetensors; do
      [[ -f "$file" ]] || continue
      name="$(basename "$(dirname "$file")")"
      mv "$file" "$repo/results/dejavu/predictors/$name/"
    done
    rm -rf "$stash/predictors"
    for dir in "$stash"/bench_runs/*/; do
      [[ -d "$dir" ]] || continue
      mv "$dir" "$repo/results/bench/"
    done
    rm -rf "$stash/bench_runs"
    for dir in "$stash"/*/; do
      [[ -d "$dir" ]] || continue
      name="$(basename "$dir")"
      if [[ -f "$dir/model.safetensors" ]]; then
        mv "$dir/model.safetensors" "$repo/models/$name/model.safetensors"
      fi
    done
    rm -rf "$stash"
    git -C "$repo" diff --quiet -- models results/dejavu/predictors 'results/bench/*_run*/' || {
      echo "device_stash: models/, predictors or bench runs differ from git after restore" >&2
      exit 1
    }
    ;;
  *)
    echo "usage: tools/device_stash.sh out|in" >&2
    exit 2
    ;;
esac
