#!/usr/bin/env python3
"""Runs 189-190: one line per bench row, saying whether the one-row GEMVs ran
on one wave (the row's backend string) and the decode time against the floor.
  python3 results/bench/wave_rows.py BENCH.jsonl"""
import json
import sys

for line in open(sys.argv[1]):
    row = json.loads(line)
    wave = "on one wave" in row.get("backend", "")
    ms = row["decode_ms_median"]
    print(f"{row['model']:20s} wave={int(wave)} {ms:.3f} ms "
          f"{ms / row['floor_ms']:.3f}x")
