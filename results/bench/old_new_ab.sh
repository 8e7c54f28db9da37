#!/usr/bin/env bash
# An A/B of an older commit's decode against this tree's on one GPU machine,
# after device_run.sh has built build-cuda-gpu (GPU machine, repository root,
# carrying build_cuda_deps and the tarball):
#   bash results/bench/old_new_ab.sh OLD.tgz ROUNDS LIST
# OLD.tgz is `git archive --format=tar.gz SHA -- . ':(exclude)results'
# ':(exclude)models' ':(exclude)docs' ':(exclude)tests/fixtures'` (its own
# kernels/cuda/run_on_gpu.sh builds its dynsparse-bench); each round runs every
# line of LIST (run_on_gpu.sh's bench-list format) on the old build, then on
# this one. A line that starts with `new-only ` runs on this tree only (for
# switches the old tree does not know). JSON lines go to $OUT/ab/bench.jsonl,
# each after a {"tree": ...} marker line (with the line's switches); stderr
# and the old build's log to $OUT/ab/ab.log.
set -uo pipefail
tarball=$1 rounds=$2 list=$3
repo=$PWD
source "$repo/kernels/cuda/bench_line.sh"
mkdir -p "$OUT/ab"
log="$OUT/ab/ab.log"
old=/tmp/old_tree
rm -rf "$old" && mkdir -p "$old" && tar xzf "$tarball" -C "$old"
(cd "$old" && OUT=/tmp/old_out DS_CUDA_DEPS="$repo/build_cuda_deps" \
  DS_CUDA_TARGETS=dynsparse-bench DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_PLANS=1 \
  DS_CUDA_SKIP_BENCH=1 DS_CUDA_CTEST_ARGS="-R ^NoTestHasThisName$" \
  bash kernels/cuda/run_on_gpu.sh) >>"$log" 2>&1
cat /tmp/old_out/build.log >>"$log" 2>/dev/null
export LD_LIBRARY_PATH="$repo/build_cuda_deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
find_bench() { find "$1" -name dynsparse-bench -type f -perm -u+x | head -1; }
old_bench=$(find_bench "$old/build-cuda-gpu")
new_bench=$(find_bench "$repo/build-cuda-gpu")
echo "old: ${old_bench:-MISSING}; new: ${new_bench:-MISSING}" | tee -a "$log"
[[ -n "$old_bench" && -n "$new_bench" ]] || exit 1
for ((i = 1; i <= rounds; ++i)); do
  while read -r args; do
    [[ -z "$args" || "$args" == \#* ]] && continue
    trees="old new"
    if [[ "$args" == new-only\ * ]]; then
      trees=new
      args=${args#new-only }
    fi
    split_bench_line "$args"
    for tree in $trees; do
      bench=$old_bench
      [[ $tree == new ]] && bench=$new_bench
      echo "{\"tree\": \"$tree\", \"round\": $i, \"env\": \"${bench_env[*]}\"}" \
        >>"$OUT/ab/bench.jsonl"
      echo "== round $i $tree: $args" >>"$log"
      timeout 180 env "${bench_env[@]}" "$bench" "${bench_args[@]}" --json \
        >>"$OUT/ab/bench.jsonl" 2>>"$log" || echo "FAILED: $tree $args" | tee -a "$log"
    done
  done <"$list"
done
python3 - "$OUT/ab/bench.jsonl" <<'PY' | tee -a "$log"
import json, sys
tree = None
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "tree" in r:
        tree = f"{r['tree']} {r['round']} {r.get('env', '')}"
        continue
    print(f"{tree:6s} {r['model']:22s} prompt {r['prompt']:5d} "
          f"{r['decode_ms_median']:7.3f} ms {r['decode_ms_median'] / r['floor_ms']:.3f}x floor "
          f"{r.get('git_sha', '')}")
PY
exit 0
