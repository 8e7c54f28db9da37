#!/usr/bin/env bash
# Stages the C++ libraries the CUDA build needs (Abseil, Eigen, GoogleTest +
# gmock, Google Benchmark) from THIS machine's installed Debian packages into
# build_cuda_deps/root (a git-ignored folder, /build*/), so they can travel to
# a GPU machine that has nvcc, cmake and ninja but not these packages.
#
#   bash kernels/cuda/stage_deps.sh            # here (needs the -dev packages)
#   ... carry build_cuda_deps to the GPU machine, then there:
#   bash kernels/cuda/run_on_gpu.sh            # picks build_cuda_deps up
#
# The staged files keep their /usr/... layout; their CMake package files find
# the libraries relative to themselves, so the folder works from any path.
# Binaries built against it find the shared libraries through their RPATH
# (run_on_gpu.sh also sets LD_LIBRARY_PATH). Size: about 21 MB.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$repo/build_cuda_deps}"
packages=(libabsl-dev libabsl20220623 libgtest-dev libgmock-dev
          libbenchmark-dev libbenchmark1debian libeigen3-dev nlohmann-json3-dev)
for p in "${packages[@]}"; do
  if ! dpkg -s "$p" >/dev/null 2>&1; then
    echo "stage_deps: package $p is not installed here (apt-get install $p)" >&2
    exit 1
  fi
done
list="$(mktemp)"
trap 'rm -f "$list"' EXIT
for p in "${packages[@]}"; do dpkg -L "$p"; done |
  grep -v -E '^/usr/share/(doc|man|lintian)/' |
  while read -r f; do
    if [[ -f "$f" || -L "$f" ]]; then echo "${f#/}"; fi
  done | sort -u >"$list"
rm -rf "$out/root"
mkdir -p "$out/root"
tar -C / -cf - -T "$list" | tar -C "$out/root" -xf -
{
  echo "staged $(date -u +%FT%TZ) from $(. /etc/os-release; echo "$PRETTY_NAME")"
  for p in "${packages[@]}"; do dpkg-query -W -f='${Package} ${Version}\n' "$p"; done
} >"$out/MANIFEST"
echo "stage_deps: $(wc -l <"$list") files, $(du -sh "$out" | cut -f1) in $out"
