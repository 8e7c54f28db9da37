# Sourced by the GPU scripts that read bench lists (run_on_gpu.sh,
# results/profile/trace_decode.sh). split_bench_line LINE: the line's leading
# VAR=value words go to the array bench_env (the run's environment), the
# dynsparse-bench arguments after them to bench_args.
split_bench_line() {
  local -a words
  read -ra words <<<"$1"
  bench_env=()
  while [[ ${#words[@]} -gt 0 && "${words[0]}" == *=* &&
           "${words[0]}" != -* ]]; do
    bench_env+=("${words[0]}")
    words=("${words[@]:1}")
  done
  bench_args=("${words[@]}")
}
