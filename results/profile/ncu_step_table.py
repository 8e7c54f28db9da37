#!/usr/bin/env python3
"""Per-kernel table of the last decode step in an ncu CSV (ncu_dejavu.sh).

Usage: python3 results/profile/ncu_step_table.py FILE.csv[.gz]
Steps are split where a step's token embedding (EmbedKernel) starts; prints
the last step's kernels grouped by name and grid, total microseconds first.
"""
import collections
import csv
import gzip
import re
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    lines = opener(path, "rt").read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    head = rows[0]
    name_i = head.index("Kernel Name")
    time_i = head.index("gpu__time_duration.sum")
    grid_i = head.index("Grid Size")
    kernels = []
    for r in rows[2:]:  # rows[1] holds the units
        if len(r) <= time_i or not r[time_i]:
            continue
        name = re.sub(r"\(.*", "", r[name_i])
        name = re.sub(r"^void ", "", name)
        name = re.sub(r"dynsparse::(cuda::)?(<unnamed>::)?", "", name)
        kernels.append((name, float(r[time_i].replace(",", "")), r[grid_i]))
    return kernels


def main():
    k = load(sys.argv[1])
    starts = [i for i, (n, _, _) in enumerate(k)
              if n.startswith("EmbedKernel") and i > 0
              and not k[i - 1][0].startswith("EmbedKernel")]
    last = k[starts[-1]:]
    print(f"{len(k)} kernels, {len(starts) + 1} steps; last step: {len(last)} "
          f"kernels, {sum(t for _, t, _ in last) / 1000:.1f} us")
    groups = collections.OrderedDict()
    for name, t, grid in last:
        g = groups.setdefault((name[:90], grid), [0, 0.0])
        g[0] += 1
        g[1] += t
    for (name, grid), (count, t) in sorted(groups.items(),
                                           key=lambda x: -x[1][1]):
        print(f"{t / 1000:9.1f} us  x{count:3d}  {t / 1000 / count:8.2f} avg  "
              f"{grid:16s} {name}")


if __name__ == "__main__":
    main()
