#!/usr/bin/env bash
# Builds dynsparse with AddressSanitizer + UBSan into build-asan/ and runs every
# CPU test there, so memory errors and UB in tests fail CI instead of passing
# silently. -O1 keeps the suite fast enough for the 2-core CI machine while the
# stacks stay readable; tests and the experiment glue compile at -O0 (their
# CMakeLists), which halves their build time without slowing the suite.
# Usage: tools/test_sanitized.sh [extra ctest args...]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${DYNSPARSE_ASAN_BUILD:-$repo/build-asan}"
bash "$repo/tools/install_deps.sh" >&2
# -g1: line tables for the sanitizers' stack traces, without full debug info
# (a fifth of the build time on 2 cores).
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DDYNSPARSE_SANITIZE=ON -DDYNSPARSE_CUDA=OFF -DDYNSPARSE_BENCHMARKS=OFF >&2
cmake --build "$build" -j"$(nproc)" >&2
if [[ -z "${DYNSPARSE_DATA:-}" && -d "$repo/../shared/data" ]]; then
  export DYNSPARSE_DATA="$(cd "$repo/../shared/data" && pwd)"
fi
echo "DYNSPARSE_DATA=${DYNSPARSE_DATA:-<unset: data tests will skip>}"
# halt_on_error: the first report fails the test. Leak checking is on; libgomp
# keeps its thread pool alive at exit, which LSan does not count as a leak.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
cd "$build"
ctest -LE cuda --output-on-failure -j"$(nproc)" "$@"
