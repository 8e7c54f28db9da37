#!/usr/bin/env python3
"""One line per bench row: the model, the settings its backend string names
after "PDL" (the switches that differ from the defaults), and the decode time
against the floor. Runs 189-190 read the one-wave GEMV off it, run 192 the
o-projection's early loads.
  python3 results/bench/decode_rows.py BENCH.jsonl"""
import json
import sys

for line in open(sys.argv[1]):
    row = json.loads(line)
    backend = row.get("backend", "").rstrip(")")
    settings = backend.split("PDL", 1)[1].strip(", ") if "PDL" in backend else ""
    ms = row["decode_ms_median"]
    print(f"{row['model']:20s} {ms:.3f} ms {ms / row['floor_ms']:.3f}x "
          f"[{settings or 'defaults'}]")
