#!/usr/bin/env python3
"""Issue 6 acceptance on ref-opt from a quality run's results.jsonl.

At MLP keep 0.25 with the predictor: perplexity within 3% of dense, and
(ppl_predictor - ppl_oracle) <= 0.25 * (ppl_random - ppl_oracle). Checked for
the uniform keep (mlp_keep=0.25) and the mean-0.25 layout (mlp_keep_layers),
both at head_keep 1.0 and 0.5. Prints a Markdown table.

  python3 results/dejavu/acceptance.py results/dejavu/quality-opt/results.jsonl
"""
import json
import sys


def main(path):
    ppl = {}
    for line in open(path):
        row = json.loads(line)
        if row.get("kind") != "result" or row.get("status") != "ok":
            continue
        if row["metric"] != "perplexity":
            continue
        p = row["params"]
        if row["method"] == "dense":
            ppl["dense"] = row["value"]
            continue
        layout = ("mlp_keep_layers=" + p["mlp_keep_layers"]
                  if "mlp_keep_layers" in p else
                  "mlp_keep=%g" % p.get("mlp_keep", 1.0))
        ppl[(layout, p.get("head_keep", 1.0), p["selector"])] = row["value"]
    dense = ppl["dense"]
    print("| MLP layout | head keep | dense | predictor | oracle | random |"
          " pred vs dense | within 3% | (pred-oracle) / (random-oracle) |"
          " <= 0.25 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    layouts = sorted({k[0] for k in ppl if k != "dense"})
    for layout in layouts:
        if "0.25" not in layout and "0.6,0.18" not in layout:
            continue
        for head in (1.0, 0.5):
            try:
                pr, orc, rnd = (ppl[(layout, head, s)]
                                for s in ("predictor", "oracle", "random"))
            except KeyError:
                continue
            rel = pr / dense - 1
            ratio = (pr - orc) / (rnd - orc)
            print("| %s | %g | %.2f | %.2f | %.2f | %.1f | %+.2f%% | %s |"
                  " %.4f | %s |" % (layout, head, dense, pr, orc, rnd,
                                    100 * rel, "yes" if rel <= 0.03 else "no",
                                    ratio, "yes" if ratio <= 0.25 else "no"))


if __name__ == "__main__":
    main(sys.argv[1])
