#!/usr/bin/env python3
"""One line per bench row: the model, the settings its backend string names
beyond the defaults (CudaBackend::name(): the device in parentheses, then
"CUDA graphs" and "PDL" when on, then each switch that is off its default),
and the decode time against the floor. Runs 189-190 read the one-wave GEMV
off it, runs 192-193 the O-projection's early loads and W_O into L2.
  python3 results/bench/decode_rows.py BENCH.jsonl"""
import json
import re
import sys

DEFAULTS = ("CUDA graphs", "PDL")

for line in open(sys.argv[1]):
    row = json.loads(line)
    backend = row.get("backend", "")
    # The words after the device's own parenthesised details.
    inner = re.sub(r"^[^(]*\(", "", backend, count=1).rstrip(")")
    words = [w for w in re.sub(r"\([^()]*\)", "", inner).split(", ")[1:] if w]
    settings = [w for w in words if w not in DEFAULTS]
    settings += [f"no {d}" for d in DEFAULTS if d not in words]
    ms = row["decode_ms_median"]
    print(f"{row['model']:20s} {ms:.3f} ms {ms / row['floor_ms']:.3f}x "
          f"[{', '.join(settings) or 'defaults'}]")
