"""Summarises the passkey rows of a `dynsparse run` folder (results.jsonl):
accuracy with its Wilson 95% interval and the answer log-likelihood (mean
+- standard error), pooled per (model, method, context) over depths, plus
paired comparisons of each lazyllm schedule against static pruning and random
drop at the same schedule (the same keys: trial i of a cell uses the same
seed for every method), from every results*.jsonl in the folder. Writes summary.md and two SVG plots into the folder.

Usage: python3 summarize_passkey.py RUN_DIR [MORE_RUN_DIRS...]
(the outputs go to RUN_DIR; jobs of the same model and method label merge
across folders, their (context, depth) cells side by side)
"""
import glob
import json
import math
import os
import sys
from collections import OrderedDict

Z = 1.959963984540054  # Normal quantile of a 95% two-sided interval.


def wilson(k, n):
    if n == 0:
        return 0.0, 1.0
    p = k / n
    center = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return (0.0 if k == 0 else center - half), (1.0 if k == n else center + half)


def mean_se(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, 0.0
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1) / n)


def sign_test(wins, losses):
    """Two-sided exact binomial (McNemar) p-value of wins vs losses."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def method_label(line):
    label = line["job"].split("|", 3)[3]  # model|device|dtype|method ...
    return label


def kind(params):
    if params.get("revive") is False:
        return "static"
    if params.get("selector") == "random":
        return "random"
    if params.get("keys") == "cached":
        return "cached"  # The keys=cached ablation (docs/lazyllm.md).
    return "lazyllm"


# Paired comparisons: each of these kinds against the baselines listed.
BASELINES = {"lazyllm": ("static", "random", "cached"),
             "cached": ("static", "random")}


def read_lines(run_dirs):
    for name in sorted(n for d in run_dirs
                       for n in glob.glob(os.path.join(d, "results*.jsonl"))):
        with open(name) as f:
            for text in f:
                if text.strip():
                    yield json.loads(text)


SCORES = ("passkey_acc", "answer_logprob", "answer_logprob_per_token")


def load(run_dirs):
    """(model, label) -> {"params", "method", "cells": {(ctx, depth): {...}}},
    in job order."""
    jobs = {}
    for line in read_lines(run_dirs):
        if line.get("kind") != "result" or line.get("status") != "ok":
            continue
        if line.get("metric") not in SCORES:
            continue
        key = (line["model"], method_label(line))
        job = jobs.setdefault(key, {"params": line["params"],
                                    "method": line["method"],
                                    "index": line["job_index"], "cells": {}})
        d = line["details"]
        cell = job["cells"].setdefault((d["context"], d["depth"]), {})
        if line["metric"] == "passkey_acc":
            cell["found"] = d["found_by_trial"]
            cell["computed"] = d.get("prefill_computed_fraction", 1.0)
            cell["after"] = d.get("generation_computed_fraction", 1.0)
        else:
            cell[line["metric"]] = d["by_trial"]
    return OrderedDict(sorted(jobs.items(), key=lambda kv: kv[1]["index"]))


def pooled(job, context):
    found, ll, tok, computed, after = [], [], [], [], []
    for (ctx, _), cell in sorted(job["cells"].items()):
        if context is not None and ctx != context:
            continue
        found += cell["found"]
        ll += cell["answer_logprob"]
        tok += cell["answer_logprob_per_token"]
        computed.append(cell["computed"])
        after.append(cell["after"])
    if not computed:
        return [], [], [], 1.0, 1.0
    return found, ll, tok, sum(computed) / len(computed), sum(after) / len(after)


def paired(a, b, context):
    """lazyllm `a` vs baseline `b`: (wins, losses, p, ll diff mean, se, n)."""
    wins = losses = 0
    diffs = []
    for key, ca in sorted(a["cells"].items()):
        if context is not None and key[0] != context:
            continue
        cb = b["cells"].get(key)
        if cb is None:
            continue
        for fa, fb in zip(ca["found"], cb["found"]):
            wins += fa and not fb
            losses += fb and not fa
        diffs += [x - y for x, y in zip(ca["answer_logprob"], cb["answer_logprob"])]
    m, se = mean_se(diffs) if diffs else (float("nan"), float("nan"))
    return wins, losses, sign_test(wins, losses), m, se, len(diffs)


def svg_plot(path, title, y_label, groups, y_range):
    """groups: [(context, [(label, y, low, high)])]; one panel per context."""
    panel_w, h, left, top, bottom = 420, 360, 70, 50, 150
    w = left + panel_w * len(groups) + 20
    lo, hi = y_range
    colors = {"dense": "#444444", "lazyllm": "#1f77b4", "static": "#ff7f0e",
              "random": "#2ca02c", "cached": "#d62728",
              "other": "#9467bd"}

    def y_of(v):
        return top + (hi - v) / (hi - lo) * (h - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">'
           f'{title}</text>',
           f'<text x="14" y="{(top + h - bottom) / 2}" text-anchor="middle" '
           f'transform="rotate(-90 14 {(top + h - bottom) / 2})">{y_label}</text>']
    for tick in range(6):
        v = lo + (hi - lo) * tick / 5
        y = y_of(v)
        out.append(f'<line x1="{left}" x2="{w - 20}" y1="{y:.1f}" y2="{y:.1f}" '
                   'stroke="#dddddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f'{v:.2f}</text>')
    for g, (context, points) in enumerate(groups):
        x0 = left + g * panel_w
        if g > 0:
            out.append(f'<line x1="{x0}" x2="{x0}" y1="{top - 20}" '
                       f'y2="{h - bottom}" stroke="#999999"/>')
        out.append(f'<text x="{x0 + panel_w / 2}" y="{top - 14}" '
                   f'text-anchor="middle">context {context}</text>')
        step = panel_w / (len(points) + 1)
        for i, (label, y, low, high, k) in enumerate(points):
            x = x0 + step * (i + 1)
            c = colors.get(k, colors["other"])
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y_of(low):.1f}" '
                       f'y2="{y_of(high):.1f}" stroke="{c}" stroke-width="2"/>')
            for b in (low, high):
                out.append(f'<line x1="{x - 5:.1f}" x2="{x + 5:.1f}" '
                           f'y1="{y_of(b):.1f}" y2="{y_of(b):.1f}" stroke="{c}"/>')
            out.append(f'<circle cx="{x:.1f}" cy="{y_of(y):.1f}" r="4" fill="{c}"/>')
            ly = h - bottom + 10
            out.append(f'<text x="{x:.1f}" y="{ly}" text-anchor="end" '
                       f'transform="rotate(-60 {x:.1f} {ly})">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    run_dir = sys.argv[1]
    jobs = load(sys.argv[1:])
    contexts = sorted({ctx for j in jobs.values() for (ctx, _) in j["cells"]})
    many_models = len({m for m, _ in jobs}) > 1
    md = ["Passkey retrieval pooled over depths per context: accuracy "
          "(found / trials, Wilson 95% interval) and the true key's "
          "log-likelihood (nats, sum over its tokens and per token; mean "
          "+- standard error over trials).", ""]
    md.append("| model | method | context | found | accuracy [95% CI] | "
              "answer log-lik | per token | prefill computed | after decode |")
    md.append("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    acc_groups, ll_groups = [], []
    for context in contexts + [None]:
        acc_points, ll_points = [], []
        for (model, label), job in jobs.items():
            found, ll, tok, computed, after = pooled(job, context)
            if not found:
                continue
            k, n = sum(found), len(found)
            low, high = wilson(k, n)
            m, se = mean_se(ll)
            mt, st = mean_se(tok)
            name = label
            if job["method"] == "lazyllm" and "schedule" in job["params"]:
                name = f"{kind(job['params'])} {job['params']['schedule']}"
            if many_models:
                name = f"{model} {name}"
            md.append(f"| {model} | {label} | {context or 'all'} | {k}/{n} | "
                      f"{k / n:.3f} [{low:.2f}, {high:.2f}] | {m:.2f} ± {se:.2f} | "
                      f"{mt:.3f} ± {st:.3f} | {computed:.3f} | {after:.3f} |")
            k_ = "dense" if job["method"] == "dense" else (
                kind(job["params"]) if job["method"] == "lazyllm" else "other")
            if context is not None:
                acc_points.append((name, k / n, low, high, k_))
                ll_points.append((name, mt, mt - Z * st, mt + Z * st, k_))
        if context is not None:
            acc_groups.append((context, acc_points))
            ll_groups.append((context, ll_points))

    # Per (context, depth) cell: hits and mean log-likelihood per token.
    cells = sorted({c for j in jobs.values() for c in j["cells"]})
    md += ["", "Per cell (context / depth): found / trials, mean answer "
           "log-likelihood per token.", "",
           "| model | method | " + " | ".join(f"{c} / {d}" for c, d in cells)
           + " |", "| --- | --- |" + " ---: |" * len(cells)]
    for (model, label), job in jobs.items():
        texts = []
        for c in cells:
            cell = job["cells"].get(c)
            if cell is None or "found" not in cell:
                texts.append("")
                continue
            tok = cell["answer_logprob_per_token"]
            texts.append(f"{sum(cell['found'])}/{len(cell['found'])}, "
                         f"{sum(tok) / len(tok):.2f}")
        md.append(f"| {model} | {label} | " + " | ".join(texts) + " |")

    # Paired: each lazyllm (and keys=cached) schedule vs its baselines at
    # that schedule.
    lines = []
    for (model, label), job in jobs.items():
        primary = kind(job["params"])
        if job["method"] != "lazyllm" or primary not in BASELINES:
            continue
        sched = job["params"].get("schedule")
        for (m2, l2), other in jobs.items():
            if m2 != model or other["method"] != "lazyllm" or other is job:
                continue
            if other["params"].get("schedule") != sched:
                continue
            if kind(other["params"]) not in BASELINES[primary]:
                continue
            for context in contexts + [None]:
                w, l, p, d, se, n = paired(job, other, context)
                if n == 0:
                    continue
                lines.append(f"| {model} | {sched} | {primary} vs "
                             f"{kind(other['params'])} | "
                             f"{context or 'all'} | {n} | {w} / {l} | {p:.3f} | "
                             f"{d:+.2f} ± {se:.2f} |")
    if lines:
        md += ["", "Paired comparison, same keys: lazyllm (and its keys=cached "
               "ablation, where run) vs static pruning and vs random drop at "
               "the same schedule (same computed fraction of prompt "
               "token-layers). found by the first only / by the other only, "
               "with the exact two-sided sign-test p-value; mean "
               "log-likelihood difference (first - other, nats) +- standard "
               "error.", "",
               "| model | schedule | comparison | context | pairs | found: "
               "first only / other only | p | answer log-lik diff |",
               "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"] + lines
    with open(os.path.join(run_dir, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    svg_plot(os.path.join(run_dir, "plot-passkey-accuracy.svg"),
             "passkey accuracy (Wilson 95% interval), pooled over depths",
             "accuracy", acc_groups, (0.0, 1.0))
    lows = [p[2] for _, g in ll_groups for p in g]
    highs = [p[3] for _, g in ll_groups for p in g]
    if lows:
        pad = 0.05 * (max(highs) - min(lows) + 1e-9)
        svg_plot(os.path.join(run_dir, "plot-answer-logprob.svg"),
                 "answer log-likelihood per token (nats, mean ± 1.96 SE)",
                 "log p per token", ll_groups, (min(lows) - pad, max(highs) + pad))
    print("\n".join(md))


if __name__ == "__main__":
    main()
