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
  # Without these ccache refuses to cache files built with the tests'
  # precompiled header (tests/CMakeLists.txt).
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
fi
# DYNSPARSE_CUDA_ARCHS overrides the CUDA targets (CI: sm_80 as PTX only, which
# checks the source for it without running ptxas twice).
archs=()
if [[ -n "${DYNSPARSE_CUDA_ARCHS:-}" ]]; then
  archs=("-DCMAKE_CUDA_ARCHITECTURES=$DYNSPARSE_CUDA_ARCHS")
fi
cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "${launcher[@]}" "${archs[@]}" "$@" >&2
cmake --build "$repo/build" -j"$(nproc)" >&2
