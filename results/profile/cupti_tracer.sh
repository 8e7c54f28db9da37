# Sourced by the CUPTI trace scripts (trace_decode.sh, kernel_time.sh) on the
# GPU machine, from the repository root, after run_on_gpu.sh built
# build-cuda-gpu/: sets $build and $tracer (the recorder tools/cupti_trace
# builds), puts the staged Debian libraries on LD_LIBRARY_PATH, and stops the
# caller when the recorder was not built. $1: the caller's name.
build=build-cuda-gpu
tracer="$build/cupti_trace/libdynsparse_cupti_trace.so"
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [[ ! -f "$tracer" ]]; then
  echo "$1: $tracer was not built (no CUPTI in the toolkit?)"
  exit 1
fi
