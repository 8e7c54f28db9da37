#!/usr/bin/env python3
"""Where an eager step's device time goes, from a cupti_trace CSV
(tools/cupti_trace; the API rows, if recorded, are ignored).

Eager steps (a LazyLLM decode step runs its kernels one launch at a time) are
not one graph launch, so step_table.py cannot cut them apart. This takes the
kernels of the trace's last --steps steps instead, each ending with a kernel
whose name contains --marker (greedy decoding ends a step with its argmax),
and sums them by name: launches, device time, how far each pushes the
timeline's end (step_table.annotate: the extensions add up to the window)
and the idle time just before it (no kernel running: the device waited for
the host to launch it), all divided by the steps.

  python3 tools/cupti_trace/kernel_time.py trace.csv --steps N
      [--marker ArgmaxKernel] [--top K]
"""
import argparse
import sys
from collections import defaultdict

from step_table import annotate, idle_us, load, span_us


def window_kernels(rows, steps, marker):
    """The device rows (kernels, copies) after the end of the (steps + 1)-th
    last kernel named like marker, up to the end of the last one, in start
    order; exits when the trace has fewer markers."""
    device = sorted((r for r in rows if not r["name"].startswith("api ")),
                    key=lambda r: r["start_ns"])
    ends = sorted(r["end_ns"] for r in device if marker in r["short"])
    if len(ends) < steps + 1:
        sys.exit(f"kernel_time: {len(ends)} kernels named like '{marker}', "
                 f"need {steps + 1} for {steps} steps")
    begin, end = ends[-steps - 1], ends[-1]
    window = [r for r in device if begin < r["start_ns"] < end]
    if not window:
        sys.exit(f"kernel_time: no kernels between the last {steps + 1} "
                 f"kernels named like '{marker}'")
    return window


def totals_by_name(kernels):
    """{short name: [launches, device us, extends us, idle us before]} over
    the kernels (in start order)."""
    annotate(kernels)
    totals = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for k in kernels:
        t = totals[k["short"]]
        t[0] += 1
        t[1] += k["us"]
        t[2] += k["extends_us"]
        t[3] += k["idle_before_us"]
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--marker", default="ArgmaxKernel",
                        help="a kernel that ends every step")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    kernels = window_kernels(load(args.trace), args.steps, args.marker)
    totals = totals_by_name(kernels)
    n = args.steps
    span = span_us(kernels)
    busy = sum(t[1] for t in totals.values())
    print(f"window {span / n:.1f} us a step, {len(kernels) / n:.1f} launches, "
          f"{busy / n:.1f} us of kernel time, {idle_us(kernels) / n:.1f} us "
          f"with no kernel running\n")
    print("| kernel | launches a step | device us a step | extends us a step "
          "| idle us before, a step |")
    print("|---|---|---|---|---|")
    ranked = sorted(totals.items(), key=lambda kv: -kv[1][2])
    for name, (calls, us, extends, idle) in ranked[:args.top]:
        print(f"| {name} | {calls / n:.1f} | {us / n:.1f} | {extends / n:.1f} "
              f"| {idle / n:.1f} |")


if __name__ == "__main__":
    main()
