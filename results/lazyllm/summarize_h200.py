"""Summarises dynsparse-bench JSON lines of dense vs lazyllm runs: TTFT
speedup over dense at the same prompt, the ideal speedup the computed
fraction implies, the share of the ideal reached, and decode ms/token."""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
dense = {}  # The first dense run with CUDA graphs at each prompt length.
for r in rows:
    if r.get("method", "dense") == "dense" and "CUDA graphs" in r["backend"]:
        dense.setdefault(r["prompt"], r)
print("| prompt | method | TTFT ms | speedup | computed | ideal | % of ideal "
      "| decode ms/token | decode vs dense |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    d = dense.get(r["prompt"])
    frac = r.get("prefill_computed_fraction")
    label = r.get("method", "dense")
    if frac is not None:
        label += f" (computed {frac:.2f}, then {r['generation_computed_fraction']:.2f})"
    if "CUDA graphs" not in r["backend"]:
        label += " eager"
    speed = d["ttft_ms"] / r["ttft_ms"] if d else float("nan")
    ideal = r.get("ideal_ttft_speedup", 1.0)
    pct = 100.0 * speed / ideal
    dec = r["decode_ms_median"] / d["decode_ms_median"] if d else float("nan")
    print(f"| {r['prompt']} | {label} | {r['ttft_ms']:.1f} | {speed:.2f}x | "
          f"{'' if frac is None else f'{frac:.3f}'} | {ideal:.2f}x | "
          f"{pct:.0f}% | {r['decode_ms_median']:.2f} | {dec:.2f}x |")
