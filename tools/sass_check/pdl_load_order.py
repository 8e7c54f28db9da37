#!/usr/bin/env python3
"""Checks that early-loading kernels read activations only after their PDL wait.

A kernel with an early-load path (the GEMVs: `if (waited) PdlWait();` at the
top, skipped when it loads weights first, then `PdlWait()` after its first
weight loads) has two or more `griddepcontrol.wait` instructions (SASS
ACQBULK). On the early path the code between the first and the second runs
before any wait, so every global load there must be a streaming weight load
(LoadStreaming: LDG.E.NA...). Anything else there reads memory that the
kernel ahead may still be writing. ptxas moved x's `__ldg` loads there once
(the deep tensor-core GEMV, run 175): `.nc` promises the data never changes
during the kernel, which programmatic dependent launch does not keep.

  cuobjdump -sass libdynsparse_cuda.a | pdl_load_order.py [--kernels REGEX]

Prints each offending kernel and load; exits 1 if any, 0 if none.
"""
import argparse
import re
import sys


def functions(lines):
    """Yields (name, body lines) for each SASS function of a dump."""
    name, body = None, []
    for line in lines:
        m = re.search(r"Function : (\S+)", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
        elif name:
            body.append(line)
    if name:
        yield name, body


def early_loads(body):
    """Non-streaming global loads between the first and second wait."""
    waits = [i for i, line in enumerate(body) if "ACQBULK" in line]
    if len(waits) < 2:
        return []
    return [line.strip() for line in body[waits[0] + 1:waits[1]]
            if re.search(r"\bLDG\.", line) and ".NA." not in line]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="Gemv",
                        help="regex of the kernel names to check")
    args = parser.parse_args(argv)
    wanted = re.compile(args.kernels)
    checked = bad = 0
    for name, body in functions(sys.stdin):
        if not wanted.search(name):
            continue
        checked += 1
        loads = early_loads(body)
        if loads:
            bad += 1
            print(f"{name}: {len(loads)} load(s) before its PDL wait, e.g.")
            print(f"    {loads[0]}")
    print(f"{checked} kernel(s) checked, {bad} with loads before the wait")
    if checked == 0:
        print("no kernel matched --kernels", file=sys.stderr)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
