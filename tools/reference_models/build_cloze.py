#!/usr/bin/env python3
"""Build the held-out cloze task `refcloze` (llm-foundry multiple-choice jsonl) from held-out documents.

Usage:
    python3 tools/reference_models/build_cloze.py --data .device_inputs/refmodels \
        --out datasets/refcloze/refcloze.jsonl [--items 800] [--seed 20261130]

Each item: a passage of consecutive sentences from one held-out paragraph ("query"), its true next
sentence and three sentences of similar length taken from other held-out documents ("choices",
each with a leading space), and the index of the true one ("gold"). The held-out documents were
never trained on (build_corpus.py splits whole documents). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import lzma
import random
import re
from pathlib import Path

SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
MAX_PER_DOC = 12
MAX_PER_SOURCE_FRACTION = 0.25


def prose_sentence(s: str) -> bool:
    """Plain sentences only: no code, no markup, mostly letters."""
    if not 25 <= len(s) <= 220 or not s[0].isupper() or s[-1] not in ".!?":
        return False
    letters = sum(c.isalpha() or c == " " for c in s)
    return letters / len(s) > 0.85 and not re.search(r"[{}<>=_\\|`$#@]|::|\(\)", s)


def candidates(doc: dict):
    """(query, true continuation) pairs from one document's paragraphs."""
    for para in re.split(r"\n\s*\n|\n(?=[A-Z])", doc["text"]):
        sents = [s.strip() for s in SENT_SPLIT.split(" ".join(para.split()))]
        for i in range(2, len(sents)):
            ctx = sents[max(0, i - 4):i]
            if all(prose_sentence(s) for s in ctx + [sents[i]]) and len(" ".join(ctx)) >= 80:
                yield " ".join(ctx), sents[i]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--items", type=int, default=800)
    ap.add_argument("--seed", type=int, default=20261130)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    docs = [json.loads(l) for l in lzma.open(args.data / "heldout.jsonl.xz", "rt", encoding="utf-8")]
    pool = []  # (source, doc index, query, continuation)
    for di, d in enumerate(docs):
        c = list(candidates(d))
        rng.shuffle(c)
        pool += [(d["src"], di, q, a) for q, a in c[:MAX_PER_DOC]]
    rng.shuffle(pool)
    per_source, items = {}, []
    cap = int(MAX_PER_SOURCE_FRACTION * args.items)
    conts = [(di, a) for _, di, _, a in pool]
    for src, di, q, a in pool:
        if len(items) >= args.items:
            break
        if per_source.get(src, 0) >= cap:
            continue
        # Distractors: true continuations of passages in other documents, of similar length.
        near = [x for dj, x in conts if dj != di and x != a and 0.7 <= len(x) / len(a) <= 1.4]
        if len(near) < 3:
            continue
        choices = rng.sample(near, 3) + [a]
        rng.shuffle(choices)
        items.append({"query": q, "choices": [" " + c for c in choices], "gold": choices.index(a)})
        per_source[src] = per_source.get(src, 0) + 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")
    print(f"{len(items)} items from {len({s for s in per_source})} sources: {per_source}")


if __name__ == "__main__":
    main()
