#!/usr/bin/env bash
# Run 190 (any sm_90 card): run 189's wave build at OccupancyBound blocks an
# SM (its loop state spills) against the default, alternated twice.
export DS_CUDA_TARGETS="dynsparse-bench"
RUN_LIST=results/bench/run190_list.txt RUN_CTEST="-R NoSuchTest" \
  bash results/bench/device_run.sh
python3 - "$OUT/bench.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    wave = "on one wave" in r.get("backend", "")
    print(f"{r['model']:20s} wave={int(wave)} "
          f"{r['decode_ms_median']:.3f} ms {r['decode_ms_median'] / r['floor_ms']:.3f}x")
PY
