"""Tables of results/lazyllm/h200_run3 (and results/combined/h200_run3) from
the run's bench.log + bench.jsonl: decode ms/token per variant, vs dense at
the same prompt, and the phase breakdown of the --token-profile lines.

usage: summarize_run3.py bench.log bench.jsonl
"""
import json
import re
import sys

log, jsonl = sys.argv[1], sys.argv[2]
args = []
for line in open(log):
    if line.startswith("== dynsparse-bench "):
        args.append(line[len("== dynsparse-bench "):].strip())
    elif line.startswith("FAILED: "):
        failed = line[len("FAILED: "):].strip()
        # The failed line has no JSON; drop its args (matched by suffix).
        for i in range(len(args) - 1, -1, -1):
            if args[i].endswith(failed):
                args.pop(i)
                break
rows = [json.loads(l) for l in open(jsonl) if l.strip()]
# A line still running when the call's time ran out has args but no JSON.
assert len(args) - len(rows) in (0, 1), (len(rows), len(args))
args = args[:len(rows)]


def label(a):
    m = re.search(r"--method (\S+)", a)
    name = m.group(1) if m else "dense"
    if "revive=false" in a:
        name += " static"
    env = re.match(r"(DYNSPARSE_\w+=\S+) ", a)
    if env:
        name += " [" + env.group(1).replace("DYNSPARSE_CUDA_", "") + "]"
    if "--token-profile" in a:
        name += " (profiled)"
    return name


dense = {}
for a, r in zip(args, rows):
    if "--method" not in a and not a.startswith("DYNSPARSE"):
        dense.setdefault((r["prompt"], r["new"]), r)

print("| prompt + new | variant | TTFT ms | TTFT vs dense | decode ms (p10-p90) "
      "| decode / dense | mean decode ms | end-to-end ms | e2e vs dense | computed prefill -> end |")
print("|---|---|---|---|---|---|---|---|---|---|")
for a, r in zip(args, rows):
    d = dense.get((r["prompt"], r["new"]))
    # End to end: TTFT plus every decode step (the mean: steps that revive
    # many tokens are slower than the median one).
    e2e = r["ttft_ms"] + r["new"] * r["decode_ms_mean"]
    frac = ""
    if "prefill_computed_fraction" in r:
        frac = (f"{r['prefill_computed_fraction']:.3f} -> "
                f"{r['generation_computed_fraction']:.3f}")
    if d:
        d_e2e = d["ttft_ms"] + d["new"] * d["decode_ms_mean"]
        vs = (f"{d['ttft_ms'] / r['ttft_ms']:.2f}x",
              f"{r['decode_ms_median'] / d['decode_ms_median']:.3f}",
              f"{d_e2e / e2e:.2f}x")
    else:
        vs = ("", "", "")
    print(f"| {r['prompt']} + {r['new']} | {label(a)} | {r['ttft_ms']:.1f} | {vs[0]} "
          f"| {r['decode_ms_median']:.2f} ({r['decode_ms_p10']:.2f}-"
          f"{r['decode_ms_p90']:.2f}) | {vs[1]} | {r['decode_ms_mean']:.2f} | {e2e:.0f} | {vs[2]} | {frac} |")

print()
print("Phase breakdown of profiled decode steps (per step; a profiled step waits")
print("for the device at every phase, so it runs slower than an unprofiled one):")
print()
print("| prompt | variant | step ms | select ms (probes) | move ms | revived "
      "from Aux | prompt token-layers computed | layers by rows: layers/step, rows/layer, ms/step, ms/layer, host ms/step |")
print("|---|---|---|---|---|---|---|---|")
for a, r in zip(args, rows):
    p = r.get("token_profile")
    if not p:
        continue
    groups = "; ".join(
        f"{g['rows']}: {g['layers']:.1f}, {g['rows_per_layer']:.1f}, "
        f"{g['ms']:.2f}, {g['ms_per_layer']:.3f}, {g['host_ms']:.2f}"
        for g in p["by_rows"])
    extra = sum(g["layers"] * (g["rows_per_layer"] - 1) for g in p["by_rows"])
    print(f"| {r['prompt']} | {label(a)} | {p['ms_per_step']:.2f} | "
          f"{p['select_ms']:.2f} ({p['probes']:.1f}) | {p['move_ms']:.2f} | "
          f"{p['revived_token_layers']:.0f} | {extra:.0f} | {groups} |")
