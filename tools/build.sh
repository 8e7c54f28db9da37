#!/usr/bin/env bash
# Installs dependencies (Debian packages) and builds dynsparse into build/.
# Usage: tools/build.sh [extra cmake args...]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bash "$repo/tools/install_deps.sh" >&2
cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >&2
cmake --build "$repo/build" -j"$(nproc)" >&2
