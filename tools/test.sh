#!/usr/bin/env bash
# Builds dynsparse and runs every CPU test (the CUDA-labelled tests need a GPU:
# see kernels/cuda/run_on_gpu.sh). Tests that need the shared evaluation data
# read $DYNSPARSE_DATA and skip, saying so, when it is unset.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bash "$repo/tools/build.sh"
if [[ -z "${DYNSPARSE_DATA:-}" && -d "$repo/../shared/data" ]]; then
  export DYNSPARSE_DATA="$(cd "$repo/../shared/data" && pwd)"
fi
echo "DYNSPARSE_DATA=${DYNSPARSE_DATA:-<unset: data tests will skip>}"
cd "$repo/build"
ctest -LE cuda --output-on-failure -j"$(nproc)" "$@"
