#!/usr/bin/env python3
"""Per-step kernel tables from a cupti_trace CSV (tools/cupti_trace).

A decode step replayed from a CUDA graph is one graph launch: its kernels
share one correlation id. For the median-length step of the trace this
prints every kernel in start order (stream, start, duration, the gap since
the previous kernel on its stream ended, and how far it extends the step:
annotate()), then the same kernels summed by name, the time with no kernel
running and the early (programmatic) starts.

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


NUMBERS = ("start_ns", "end_ns", "stream", "correlation", "graph", "grid",
           "block")


def load(path):
    """The trace's rows, numbers parsed; exits naming the file, line and
    field of the first malformed one."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"{path}: cannot read: {e.strerror}")
    for line, r in enumerate(rows, start=2):
        for key in NUMBERS + ("name",):
            if r.get(key) is None:
                sys.exit(f"{path}:{line}: field '{key}' is missing")
        for key in NUMBERS:
            try:
                r[key] = int(r[key])
            except ValueError:
                sys.exit(f"{path}:{line}: field '{key}' is not an integer: "
                         f"{r[key]!r}")
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


def annotate(kernels):
    """Adds to each kernel (in start order) its length `us`, `gap_us` since
    the previous kernel on the same stream ended (negative: started early,
    as programmatic dependent launch allows) and `extends_us`, how far it
    pushes the end of the step's timeline past every kernel that started
    before it, and `idle_before_us`, the time with no kernel running just
    before it. The extensions add up to the step's span whatever the
    streams (a graph maps its branches onto streams of the driver's
    choosing, so per-stream sums mislead); time two kernels share goes to
    the one that started first, so a long side-stream kernel can take
    credit for main-stream work it overlapped: read the rows for that."""
    last_on_stream = {}
    reach = None
    for k in kernels:
        k["us"] = (k["end_ns"] - k["start_ns"]) / 1e3
        prev = last_on_stream.get(k["stream"])
        k["gap_us"] = (k["start_ns"] - prev) / 1e3 if prev is not None else 0.0
        last_on_stream[k["stream"]] = k["end_ns"]
        # Idle time before a kernel counts as its extension too.
        base = k["start_ns"] if reach is None else reach
        k["extends_us"] = max(0, k["end_ns"] - base) / 1e3
        k["idle_before_us"] = max(0, k["start_ns"] - base) / 1e3
        reach = k["end_ns"] if reach is None else max(reach, k["end_ns"])


def idle_us(kernels):
    """Time inside the step with no kernel running (annotates the kernels)."""
    annotate(kernels)
    return sum(k["idle_before_us"] for k in kernels)


def print_step(kernels, all_rows):
    t0 = min(k["start_ns"] for k in kernels)
    names = {}
    for k in kernels:
        names.setdefault(k["stream"], f"s{len(names)}")
    print("| # | stream | kernel | grid | start us | us | gap us | extends us |")
    print("|---|---|---|---|---|---|---|---|")
    for i, k in enumerate(kernels):
        if all_rows or i < 60:
            print(f"| {i} | {names[k['stream']]} | {k['short']} | {k['grid']} "
                  f"| {(k['start_ns'] - t0) / 1e3:.1f} | {k['us']:.1f} | "
                  f"{k['gap_us']:.1f} | {k['extends_us']:.1f} |")
    if not all_rows and len(kernels) > 60:
        print(f"| ... | | {len(kernels) - 60} more (--all-rows) | | | | | |")


def print_summary(kernels):
    by_name = defaultdict(lambda: [0, 0.0, 0.0])
    for k in kernels:
        entry = by_name[k["short"]]
        entry[0] += 1
        entry[1] += k["us"]
        entry[2] += k["extends_us"]
    print()
    print("| kernel | count | total us | mean us | total extends us |")
    print("|---|---|---|---|---|")
    for name, (n, total, extends) in sorted(by_name.items(),
                                            key=lambda item: -item[1][2]):
        print(f"| {name} | {n} | {total:.1f} | {total / n:.2f} | "
              f"{extends:.1f} |")
    early = -sum(min(k["gap_us"], 0.0) for k in kernels)
    print()
    print(f"step span {span_us(kernels):.1f} us, {len(kernels)} kernels on "
          f"{len({k['stream'] for k in kernels})} streams, "
          f"{idle_us(kernels):.1f} us with no kernel running, {early:.1f} us "
          f"of early starts (PDL)")


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
    annotate(pick)
    print_step(pick, args.all_rows)
    print_summary(pick)


if __name__ == "__main__":
    main()
