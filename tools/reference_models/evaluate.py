#!/usr/bin/env python3
"""Evaluate the reference models with transformers (the recipe's own check; dynsparse checks itself
through passkey_check.py and its perplexity command).

Usage:
    python3 tools/reference_models/evaluate.py --models DIR[,DIR] --data .device_inputs/refmodels \
        --eval-data DIR_WITH_wikitext2_ptb --cloze datasets/refcloze/refcloze.jsonl --out results.json

Reports per model: WikiText-2 test (raw) and PTB test perplexity and bits/byte (sliding window,
context 2048, stride 1024, BOS once at the start, each token scored once: the protocol of
`dynsparse perplexity`), held-out corpus perplexity against a unigram baseline fitted on the
training stream, passkey retrieval accuracy by prompt length and needle depth (greedy), the
held-out cloze task accuracy, and for OPT the fraction of zero ReLU outputs per layer and the mean
Jaccard overlap of two random tokens' active-neuron sets.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic  # noqa: E402

BOS = 0


@torch.no_grad()
def nll_sliding(model, ids: list[int] | np.ndarray, ctx: int, stride: int, dev) -> tuple[float, int]:
    """Sum of NLL (nats) over ids[1:], each scored once with up to ctx tokens of context."""
    ids = torch.as_tensor(np.asarray(ids, dtype=np.int64), device=dev)
    n = len(ids)
    total, count, prev_end = 0.0, 0, 0
    for begin in range(0, n, stride):
        end = min(begin + ctx, n)
        x = ids[begin:end][None]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            logits = model(input_ids=x, use_cache=False).logits[0].float()
        lp = F.cross_entropy(logits[:-1], x[0, 1:], reduction="none")
        new = end - max(prev_end, begin + 1) if begin > 0 else end - 1
        total += lp[-new:].sum().item() if new > 0 else 0.0
        count += max(new, 0)
        prev_end = end
        if end == n:
            break
    return total, count


def text_metrics(model, tok, text: str, ctx: int, dev) -> dict:
    ids = [BOS] + tok.encode(text, add_special_tokens=False).ids
    nll, count = nll_sliding(model, ids, ctx, ctx // 2, dev)
    nbytes = len(text.encode("utf-8"))
    return {"tokens_scored": count, "bytes": nbytes, "token_perplexity": math.exp(nll / count),
            "bits_per_byte": nll / math.log(2) / nbytes}


def heldout_metrics(model, held: np.ndarray, train: np.ndarray, vocab: int, ctx: int, dev, max_tokens: int) -> dict:
    held = held[:max_tokens]
    nll, count = nll_sliding(model, held, ctx, ctx // 2, dev)
    counts = np.bincount(train, minlength=vocab).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    uni = -logp[held[1:]].mean()
    return {"tokens_scored": count, "token_perplexity": math.exp(nll / count), "unigram_perplexity": math.exp(uni)}


def filler_text(tok, held: np.ndarray, rng, n_tokens: int) -> list[int]:
    """A window of held-out text with no document markers, as token ids."""
    while True:
        s = int(rng.integers(0, len(held) - n_tokens - 1))
        w = held[s:s + n_tokens]
        if not np.isin(w, [0, 1, 2]).any():
            return [int(t) for t in w]


def passkey_prompt(tok, held, rng, length: int, depth: float) -> tuple[str, str]:
    """A text prompt of about `length` tokens (BOS included) with the pass key at `depth`."""
    key = synthetic.random_number(rng)
    needle = synthetic.PASSKEY_NEEDLE.format(v=key)
    fixed = len(tok.encode(needle + synthetic.PASSKEY_QUESTION, add_special_tokens=False).ids) + 1
    fill = filler_text(tok, held, rng, max(length - fixed, 8))
    cut = int(round(depth * len(fill)))
    pre, post = tok.decode(fill[:cut]), tok.decode(fill[cut:])
    return pre + needle + post + synthetic.PASSKEY_QUESTION, key


@torch.no_grad()
def greedy(model, ids: list[int], n_new: int, dev) -> list[int]:
    x = torch.tensor([ids], device=dev)
    out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=n_new, do_sample=False,
                         pad_token_id=2, eos_token_id=1)
    return out[0, len(ids):].tolist()


def passkey_grid(model, tok, held, dev, lengths, depths, trials, seed=5) -> dict:
    rng = np.random.default_rng(seed)
    grid, ok_all, n_all, prompt_tokens = {}, 0, 0, {}
    for L in lengths:
        for d in depths:
            ok = 0
            for _ in range(trials):
                prompt, key = passkey_prompt(tok, held, rng, L, d)
                ids = tok.encode(prompt).ids
                prompt_tokens[L] = len(ids)
                gen = tok.decode(greedy(model, ids, 10, dev))
                ok += gen.strip().startswith(key) and not gen.strip()[len(key):len(key) + 1].isdigit()
            grid[f"{L}@{d}"] = ok / trials
            ok_all += ok
            n_all += trials
    by_len = {L: float(np.mean([grid[f"{L}@{d}"] for d in depths])) for L in lengths}
    return {"accuracy": ok_all / n_all, "by_length": by_len, "grid": grid, "trials_per_cell": trials,
            "prompt_tokens_by_length": prompt_tokens}


@torch.no_grad()
def relu_sparsity(model, held: np.ndarray, dev, n_seq=4, ctx=1024, pairs=4000, seed=3) -> dict:
    layers = model.model.decoder.layers
    acts = {}
    hooks = [l.fc1.register_forward_hook(lambda m, i, o, k=k: acts.__setitem__(k, (o > 0).reshape(-1, o.shape[-1])))
             for k, l in enumerate(layers)]
    rng = np.random.default_rng(seed)
    zero = np.zeros(len(layers))
    jac = np.zeros(len(layers))
    for _ in range(n_seq):
        s = int(rng.integers(0, len(held) - ctx))
        x = torch.as_tensor(held[s:s + ctx].astype(np.int64), device=dev)[None]
        model(input_ids=x, use_cache=False)
        for k in range(len(layers)):
            a = acts[k].float()
            zero[k] += 1.0 - a.mean().item()
            i = torch.as_tensor(rng.integers(0, a.shape[0], size=pairs), device=dev)
            j = torch.as_tensor(rng.integers(0, a.shape[0], size=pairs), device=dev)
            keep = i != j
            inter = (a[i] * a[j]).sum(-1)
            union = ((a[i] + a[j]) > 0).float().sum(-1).clamp(min=1)
            jac[k] += (inter / union)[keep].mean().item()
    for h in hooks:
        h.remove()
    return {"zero_fraction_per_layer": (zero / n_seq).round(4).tolist(),
            "mean_jaccard_per_layer": (jac / n_seq).round(4).tolist(),
            "tokens_per_sequence": ctx, "sequences": n_seq, "random_pairs_per_sequence": pairs}


@torch.no_grad()
def cloze(model, tok, path: Path, dev) -> dict:
    items = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    correct = correct_norm = 0
    for it in items:
        q = [BOS] + tok.encode(it["query"], add_special_tokens=False).ids
        scores, norm = [], []
        for ch in it["choices"]:
            c = tok.encode(ch, add_special_tokens=False).ids
            qc = (q + c)[-model.config.max_position_embeddings:]  # never past the position table
            x = torch.tensor([qc], device=dev)
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
                logits = model(input_ids=x, use_cache=False).logits[0].float()
            nq = len(qc) - len(c)
            lp = torch.log_softmax(logits[nq - 1:-1], -1).gather(-1, x[0, nq:, None]).sum().item()
            scores.append(lp)
            norm.append(lp / len(ch.encode("utf-8")))
        correct += int(np.argmax(scores) == it["gold"])
        correct_norm += int(np.argmax(norm) == it["gold"])
    return {"items": len(items), "accuracy": correct / len(items), "accuracy_bytenorm": correct_norm / len(items),
            "chance": float(np.mean([1 / len(it["choices"]) for it in items]))}


def main() -> int:
    from tokenizers import Tokenizer
    import transformers
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True)
    ap.add_argument("--data", required=True, type=Path, help="folder with tokenizer.json (+ work npy files)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/refmodels_work"), help="train.npy / heldout.npy")
    ap.add_argument("--eval-data", type=Path, help="folder with wikitext2/wiki.test.raw and ptb/ptb.test.txt")
    ap.add_argument("--cloze", type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--lengths", default="256,512,1000,1500,2000")
    ap.add_argument("--depths", default="0,0.25,0.5,0.75,1")
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--heldout-tokens", type=int, default=400_000)
    ap.add_argument("--quick", action="store_true", help="tiny amounts of everything (dry run)")
    ap.add_argument("--keep-crlf", action="store_true", help="score eval files byte for byte (no CRLF -> LF)")
    args = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tok = Tokenizer.from_file(str(args.data / "tokenizer.json"))
    train = np.load(args.work / "train.npy")
    held = np.load(args.work / "heldout.npy")
    lengths = [int(x) for x in args.lengths.split(",")]
    depths = [float(x) for x in args.depths.split(",")]
    results = {"device": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu",
               "torch": torch.__version__, "transformers": transformers.__version__, "models": {}}
    for mdir in args.models.split(","):
        t0 = time.time()
        mdir = Path(mdir)
        model = transformers.AutoModelForCausalLM.from_pretrained(mdir, dtype=torch.float32).to(dev).eval()
        ctx = model.config.max_position_embeddings
        r = {"params": sum(p.numel() for p in model.parameters()), "context": ctx}
        if args.eval_data:
            limit = 20000 if args.quick else None
            for key, rel in (("wikitext2_test", "wikitext2/wiki.test.raw"), ("ptb_test", "ptb/ptb.test.txt")):
                # Python's universal newlines turn the shared WikiText-2 file's CRLF into LF (the shipped
                # numbers); --keep-crlf scores the bytes as stored, as `dynsparse perplexity` does.
                with open(args.eval_data / rel, encoding="utf-8", newline="" if args.keep_crlf else None) as f:
                    text = f.read()
                r[key] = text_metrics(model, tok, text[:limit] if limit else text, ctx, dev)
                print(f"[{mdir.name}] {key}: {r[key]}", flush=True)
        r["heldout_corpus"] = heldout_metrics(model, held, train, tok.get_vocab_size(), ctx, dev,
                                              5000 if args.quick else args.heldout_tokens)
        print(f"[{mdir.name}] heldout: {r['heldout_corpus']}", flush=True)
        if args.cloze and args.cloze.exists():
            r["refcloze"] = cloze(model, tok, args.cloze, dev)
            print(f"[{mdir.name}] cloze: {r['refcloze']}", flush=True)
        r["passkey"] = passkey_grid(model, tok, held, dev, lengths, depths, 1 if args.quick else args.trials)
        print(f"[{mdir.name}] passkey: {r['passkey']['accuracy']:.3f} {r['passkey']['by_length']}", flush=True)
        if model.config.model_type == "opt":
            r["relu_sparsity"] = relu_sparsity(model, held, dev, n_seq=1 if args.quick else 4,
                                               ctx=min(1024, ctx))
            print(f"[{mdir.name}] sparsity: {r['relu_sparsity']}", flush=True)
        r["eval_seconds"] = round(time.time() - t0, 1)
        results["models"][mdir.name] = r
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
