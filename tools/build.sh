#!/usr/bin/env bash
# Installs dependencies (Debian packages) and builds dynsparse into build/.
# Usage: tools/build.sh [extra cmake args...]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bash "$repo/tools/install_deps.sh" >&2
launcher=()
# ccache (optional) makes rebuilds in several build folders cheap.
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "${launcher[@]}" "$@" >&2
cmake --build "$repo/build" -j"$(nproc)" >&2
