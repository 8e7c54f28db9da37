#!/usr/bin/env python3
"""Passkey retrieval measured by dynsparse itself: greedy `dynsparse generate` on long prompts.

Usage:
    python3 tools/reference_models/passkey_check.py --model models/ref-llama \
        --filler .device_inputs/refmodels/heldout.jsonl.xz [--prompts 60] [--tokens 2000] \
        [--dynsparse build/dynsparse] [--json-out results/reference_models/passkey_dynsparse.json]

Each prompt is filler text with the pass-key sentences of the training mix (synthetic.py) at a
random depth (uniform over the prompt, both ends included), then the question; the prompt is
trimmed, by re-tokenizing with `dynsparse tokenize`, to --tokens tokens (BOS included, within
--slack). A prompt counts as retrieved when the greedy continuation starts with the key.
--filler is a plain text file or the held-out corpus (.jsonl.xz from build_corpus.py).
Needs only the standard library and numpy.
"""

from __future__ import annotations

import argparse
import json
import lzma
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic  # noqa: E402  (templates only; numpy is not needed for them)


def load_filler(path: Path) -> list[str]:
    """Paragraphs of filler text."""
    if path.name.endswith(".jsonl.xz"):
        with lzma.open(path, "rt", encoding="utf-8") as f:
            text = "\n\n".join(json.loads(l)["text"] for l in f)
    else:
        text = path.read_text(encoding="utf-8")
    return [p.strip() for p in text.split("\n\n") if len(p.strip()) > 40]


def count_tokens(exe: str, model: str, text: str) -> int:
    out = subprocess.run([exe, "tokenize", "--model", model, "--string", text, "--json"],
                         check=True, capture_output=True, text=True).stdout
    return len(json.loads(out)["ids"])


def make_prompt(exe, model, paras, rng, target, slack) -> tuple[str, str, float, int]:
    key = synthetic.random_number_py(rng)
    needle = synthetic.PASSKEY_NEEDLE.format(v=key)
    start = rng.randrange(len(paras))
    filler = ""
    i = start
    while len(filler) < target * 6:  # more characters than needed; trimmed below
        filler += paras[i % len(paras)] + "\n\n"
        i += 1
    depth = rng.random()
    chars = target * 4
    for _ in range(6):
        body = filler[:chars]
        cut = int(depth * len(body))
        prompt = body[:cut] + needle + body[cut:] + synthetic.PASSKEY_QUESTION
        n = count_tokens(exe, model, prompt)
        if abs(n - target) <= slack:
            return prompt, key, depth, n
        chars = max(100, int(chars * (target / n)) - (1 if n > target else -1))
    return prompt, key, depth, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--filler", required=True, type=Path)
    ap.add_argument("--dynsparse", default="build/dynsparse")
    ap.add_argument("--prompts", type=int, default=60)
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--slack", type=int, default=25)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    paras = load_filler(args.filler)
    rows, t0 = [], time.time()
    for k in range(args.prompts):
        prompt, key, depth, n = make_prompt(args.dynsparse, args.model, paras, rng, args.tokens, args.slack)
        out = subprocess.run([args.dynsparse, "generate", "--model", args.model, "--prompt", prompt, "--greedy",
                              "--max-new", "8", "--threads", str(args.threads), "--json"],
                             check=True, capture_output=True, text=True).stdout
        text = json.loads(out).get("text", "")
        got = text.strip()
        ok = got.startswith(key) and not got[len(key):len(key) + 1].isdigit()
        rows.append({"depth": round(depth, 4), "prompt_tokens": n, "key": key, "generated": text, "ok": ok})
        print(f"[{k + 1}/{args.prompts}] depth {depth:.3f} tokens {n} key {key} -> {text!r} {'ok' if ok else 'MISS'}",
              file=sys.stderr, flush=True)
    acc = sum(r["ok"] for r in rows) / len(rows)
    buckets = {}
    for r in rows:
        b = f"{min(int(r['depth'] * 5), 4) * 0.2:.1f}-{min(int(r['depth'] * 5), 4) * 0.2 + 0.2:.1f}"
        buckets.setdefault(b, []).append(r["ok"])
    result = {"model": args.model, "prompts": len(rows), "target_tokens": args.tokens, "accuracy": acc,
              "accuracy_by_depth": {b: sum(v) / len(v) for b, v in sorted(buckets.items())},
              "min_prompt_tokens": min(r["prompt_tokens"] for r in rows),
              "max_prompt_tokens": max(r["prompt_tokens"] for r in rows),
              "seconds": round(time.time() - t0, 1), "seed": args.seed, "rows": rows}
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
