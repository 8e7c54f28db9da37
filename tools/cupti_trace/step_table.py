#!/usr/bin/env python3
"""Per-step kernel tables from a cupti_trace CSV (tools/cupti_trace).

A decode step replayed from a CUDA graph is one graph launch: its kernels
share one correlation id. For the median-length step of the trace this
prints every kernel in start order (stream, start, duration, and the gap
since the previous kernel on the same stream ended: negative when a
programmatic dependent launch started it early), then the same kernels
summed by name, and how much of the step the main stream spent between
kernels.

  python3 tools/cupti_trace/step_table.py trace.csv [--skip N] [--all-rows]
"""
import argparse
import csv
import re
import statistics
import sys
from collections import defaultdict


def short_name(name):
    name = re.sub(r"^void ", "", name)
    name = name.replace("(anonymous namespace)::", "")
    name = name.replace("dynsparse::cuda::", "").replace("dynsparse::", "")
    name = re.sub(r"\(.*$", "", name)  # the parameter list
    return name[:70]


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for key in ("start_ns", "end_ns", "stream", "correlation", "graph",
                    "grid", "block"):
            r[key] = int(r[key])
        r["short"] = short_name(r["name"])
    return rows


def steps_of(rows):
    launches = defaultdict(list)
    for r in rows:
        if r["graph"] != 0:
            launches[r["correlation"]].append(r)
    steps = sorted(launches.values(),
                   key=lambda ks: min(k["start_ns"] for k in ks))
    return [sorted(ks, key=lambda k: k["start_ns"]) for ks in steps]


def span_us(kernels):
    return (max(k["end_ns"] for k in kernels) -
            min(k["start_ns"] for k in kernels)) / 1e3


def print_step(kernels, all_rows):
    t0 = min(k["start_ns"] for k in kernels)
    counts = defaultdict(int)
    for k in kernels:
        counts[k["stream"]] += 1
    main = max(counts, key=counts.get)
    last_end = {}
    gaps = []
    print("| # | stream | kernel | grid | start us | us | gap us | adds us |")
    print("|---|---|---|---|---|---|---|---|")
    for i, k in enumerate(kernels):
        prev = last_end.get(k["stream"])
        gap = (k["start_ns"] - prev) / 1e3 if prev is not None else 0.0
        # What the kernel adds to its stream's timeline: end minus the
        # previous kernel's end (the whole kernel for the first one).
        k["adds_us"] = (k["end_ns"] - (prev if prev is not None else
                                       k["start_ns"])) / 1e3
        last_end[k["stream"]] = k["end_ns"]
        k["gap_us"] = gap
        k["us"] = (k["end_ns"] - k["start_ns"]) / 1e3
        gaps.append(gap)
        if all_rows or i < 60:
            label = "main" if k["stream"] == main else "side"
            print(f"| {i} | {label} | {k['short']} | {k['grid']} | "
                  f"{(k['start_ns'] - t0) / 1e3:.1f} | {k['us']:.1f} | "
                  f"{gap:.1f} | {k['adds_us']:.1f} |")
    if not all_rows and len(kernels) > 60:
        print(f"| ... | | {len(kernels) - 60} more (--all-rows) | | | | | |")
    return main


def print_summary(kernels, main):
    by_name = defaultdict(lambda: [0, 0.0, 0.0, 0.0, set()])
    for k in kernels:
        entry = by_name[k["short"]]
        entry[0] += 1
        entry[1] += k["us"]
        entry[2] += k["gap_us"]
        entry[3] += k["adds_us"]
        entry[4].add("main" if k["stream"] == main else "side")
    print()
    print("| kernel | stream | count | total us | mean us | "
          "total gap before, us | total adds us |")
    print("|---|---|---|---|---|---|---|")
    for name, (n, total, gap, adds, streams) in sorted(
            by_name.items(), key=lambda item: -item[1][3]):
        print(f"| {name} | {'+'.join(sorted(streams))} | {n} | {total:.1f} |"
              f" {total / n:.2f} | {gap:.1f} | {adds:.1f} |")
    on_main = [k for k in kernels if k["stream"] == main]
    busy = sum(k["us"] for k in on_main)
    positive_gaps = sum(max(k["gap_us"], 0.0) for k in on_main)
    overlap = -sum(min(k["gap_us"], 0.0) for k in on_main)
    span = span_us(kernels)
    print()
    print(f"step span {span:.1f} us; main stream: {len(on_main)} kernels, "
          f"{busy:.1f} us inside kernels (overlapping ones counted twice), "
          f"{positive_gaps:.1f} us between kernels, {overlap:.1f} us of "
          f"early starts (PDL)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--skip", type=int, default=2,
                        help="graph launches to ignore at the start")
    parser.add_argument("--all-rows", action="store_true")
    args = parser.parse_args()
    rows = load(args.trace)
    steps = steps_of(rows)[args.skip:]
    if not steps:
        sys.exit(f"{args.trace}: no graph launches after --skip "
                 f"{args.skip} ({len(rows)} kernels outside graphs)")
    spans = [span_us(s) for s in steps]
    median = statistics.median(spans)
    print(f"{args.trace}: {len(steps)} graph launches, span median "
          f"{median:.1f} us (min {min(spans):.1f}, max {max(spans):.1f}), "
          f"{len(steps[-1])} kernels each")
    pick = min(steps, key=lambda s: abs(span_us(s) - median))
    print()
    main_stream = print_step(pick, args.all_rows)
    print_summary(pick, main_stream)


if __name__ == "__main__":
    main()
