#!/usr/bin/env python3
"""Where an eager step's host time goes, from a cupti_trace CSV recorded with
DYNSPARSE_TRACE_API=1 (tools/cupti_trace).

Every API call of the window (the trace's last --last-ms milliseconds of API
calls, or from --from-fraction of its span: the decode steps of a bench run)
is charged two host times: the gap since the previous
call ended (our own code between calls) and its own duration. Both go to
what the call launched (a kernel or copy, matched by correlation id) or else
to the API function (a synchronisation, an event). Calls nested inside
another (the driver under the runtime) count only once; calls after the last
kernel (teardown) are left out.

  python3 tools/cupti_trace/host_gaps.py trace.csv [--last-ms MS |
      --from-fraction F] [--steps N] [--top K]
"""
import argparse
import sys
from collections import defaultdict

from step_table import load, short_name


def charge(rows, from_fraction, last_ms=None):
    """(totals per target: [calls, gap_ns, api_ns], window_ns)."""
    api = sorted((r for r in rows if r["name"].startswith("api ")),
                 key=lambda r: r["start_ns"])
    if not api:
        sys.exit("host_gaps: no API rows (record with DYNSPARSE_TRACE_API=1)")
    launched = {r["correlation"]: short_name(r["name"]) for r in rows
                if not r["name"].startswith("api ")}
    # The window ends with the last kernel: after it come the process's
    # teardown calls (the pools' cudaFree), not steps.
    kernels_end = max((r["end_ns"] for r in rows
                       if not r["name"].startswith(("api ", "memcpy",
                                                    "memset"))), default=None)
    if kernels_end is not None:
        api = [r for r in api if r["start_ns"] <= kernels_end] or api
    first, last = api[0]["start_ns"], api[-1]["end_ns"]
    begin = (last - int(last_ms * 1e6) if last_ms is not None else
             first + int((last - first) * from_fraction))
    totals = defaultdict(lambda: [0, 0, 0])
    covered_until = None
    window_start = None
    for r in api:
        if r["start_ns"] < begin:
            covered_until = max(covered_until or 0, r["end_ns"])
            continue
        if window_start is None:
            window_start = r["start_ns"]
        if covered_until is not None and r["start_ns"] < covered_until:
            covered_until = max(covered_until, r["end_ns"])
            continue  # nested in the previous call
        target = launched.get(r["correlation"], r["name"])
        t = totals[target]
        t[0] += 1
        if covered_until is not None:
            t[1] += r["start_ns"] - covered_until
        t[2] += r["end_ns"] - r["start_ns"]
        covered_until = r["end_ns"]
    return totals, (covered_until or 0) - (window_start or 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--from-fraction", type=float, default=0.5)
    parser.add_argument("--last-ms", type=float)
    parser.add_argument("--steps", type=int, default=1,
                        help="steps in the window: times are divided by it")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    totals, window = charge(load(args.trace), args.from_fraction,
                            args.last_ms)
    per = 1e3 * args.steps  # ns -> us per step
    gap = sum(t[1] for t in totals.values())
    inside = sum(t[2] for t in totals.values())
    print(f"window {window / per:.1f} us a step: {gap / per:.1f} us between "
          f"calls, {inside / per:.1f} us inside them\n")
    print("| launched or called | calls a step | us between | us inside |")
    print("|---|---|---|---|")
    ranked = sorted(totals.items(), key=lambda kv: -(kv[1][1] + kv[1][2]))
    for name, (calls, g, a) in ranked[:args.top]:
        print(f"| {name} | {calls / args.steps:.1f} | {g / per:.1f} | "
              f"{a / per:.1f} |")


if __name__ == "__main__":
    main()
