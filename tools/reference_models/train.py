#!/usr/bin/env python3
"""Train dynsparse's two reference models (ref-llama, ref-opt) from scratch, in one command.

Usage (GPU; both models train at once as two processes on one GPU):
    python3 tools/reference_models/train.py --data .device_inputs/refmodels --out $OUT --train-seconds 390
CPU dry run (tiny shapes, a few steps; checks the whole path including export):
    python3 tools/reference_models/train.py --data .device_inputs/refmodels --out /tmp/refdry --tiny

Inputs under --data (made by build_corpus.py and train_tokenizer.py): train.jsonl.xz,
heldout.jsonl.xz, tokenizer.json, tokenizer_config.json. The training stream is every training
document as <s> text </s>, in a seeded shuffled order; batches are random windows of it, and a
fraction (--synthetic) of the sequences are in-context retrieval tasks (synthetic.py).
The learning rate follows a cosine over wall-clock time (--train-seconds), so the schedule ends
on time whatever the throughput. Every --save-every seconds and at the end each model is written
in fp16 with save_pretrained; <out>/<name>/ receives config.json, model.safetensors and
meta.json (shapes, hyper-parameters, the training curve), so $OUT stays within 8 files.
"""

from __future__ import annotations

import argparse
import copy
import json
import lzma
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic  # noqa: E402

BOS, EOS, PAD = 0, 1, 2
T0 = time.time()

# Shapes: both models together stay under 60 MB as fp16 safetensors.
SHAPES = {
    "ref-llama": dict(hidden=384, layers=8, heads=6, kv_heads=2, ffn=1024, ctx=2048),
    "ref-opt": dict(hidden=384, layers=6, heads=6, ffn=1408, ctx=2048),
}
TINY = {
    "ref-llama": dict(hidden=64, layers=2, heads=4, kv_heads=2, ffn=128, ctx=256),
    "ref-opt": dict(hidden=64, layers=2, heads=4, ffn=128, ctx=256),
}


def make_config(name: str, shape: dict, vocab: int):
    import transformers
    common = dict(vocab_size=vocab, hidden_size=shape["hidden"], num_hidden_layers=shape["layers"],
                  num_attention_heads=shape["heads"], max_position_embeddings=shape["ctx"],
                  bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, tie_word_embeddings=True)
    if name == "ref-llama":
        return transformers.LlamaConfig(
            intermediate_size=shape["ffn"], num_key_value_heads=shape["kv_heads"], hidden_act="silu",
            rms_norm_eps=1e-5, rope_theta=10000.0, attention_bias=False, mlp_bias=False, **common)
    return transformers.OPTConfig(
        ffn_dim=shape["ffn"], do_layer_norm_before=True, word_embed_proj_dim=shape["hidden"],
        activation_function="relu", enable_bias=True, layer_norm_elementwise_affine=True,
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, layerdrop=0.0, **common)


def read_docs(path: Path, limit: int | None):
    out = []
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line)["text"])
            if limit and len(out) >= limit:
                break
    return out


def tokenize_stream(data: Path, split: str, tok, seed: int, limit: int | None) -> np.ndarray:
    docs = read_docs(data / f"{split}.jsonl.xz", limit)
    order = np.random.default_rng(seed).permutation(len(docs))
    encs = tok.encode_batch([docs[i] for i in order], add_special_tokens=False)
    parts = []
    for e in encs:
        parts += [np.array([BOS], np.uint16), np.array(e.ids, np.uint16), np.array([EOS], np.uint16)]
    return np.concatenate(parts)


def prepare(args) -> None:
    """Driver step: tokenizes the corpus once for both trainers."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(args.data / "tokenizer.json"))
    t0 = time.time()
    for split in ("train", "heldout"):
        arr = tokenize_stream(args.data, split, tok, args.seed, args.max_docs)
        np.save(args.work / f"{split}.npy", arr)
        print(f"[prep] {split}: {len(arr):,} tokens", flush=True)
    print(f"[prep] tokenized in {time.time() - t0:.1f}s", flush=True)


def export(model, name: str, out: Path, tok_dir: Path, meta: dict) -> None:
    import torch
    tmp = Path(meta["work"]) / f"{name}.save"
    if tmp.exists():
        shutil.rmtree(tmp)
    m = copy.deepcopy(model).to(torch.float16)
    m.save_pretrained(tmp, safe_serialization=True)
    dst = out / name
    dst.mkdir(parents=True, exist_ok=True)
    for f in ("config.json", "model.safetensors"):
        shutil.copyfile(tmp / f, dst / f".{f}.part")
        os.replace(dst / f".{f}.part", dst / f)  # never leave a half-written file behind
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(tok_dir / f, tmp / f)
    (dst / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def train_one(args) -> None:
    import torch
    import torch.nn.functional as F
    import transformers
    from tokenizers import Tokenizer

    name = args.models[0]
    dev = torch.device(args.device)
    torch.manual_seed(args.seed)
    tok = Tokenizer.from_file(str(args.data / "tokenizer.json"))
    shape = (TINY if args.tiny else SHAPES)[name]
    ctx = shape["ctx"]
    train = np.load(args.work / "train.npy")
    held = np.load(args.work / "heldout.npy")
    cfg = make_config(name, shape, tok.get_vocab_size())
    cls = transformers.LlamaForCausalLM if name == "ref-llama" else transformers.OPTForCausalLM
    cfg._attn_implementation = "sdpa"
    model = cls(cfg).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"[{name}] {n_params:,} params, ctx {ctx}", flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=dev.type == "cuda")
    fwd = model
    if args.compile:
        fwd = torch.compile(model)
    rng = np.random.default_rng(args.seed + (1 if name == "ref-opt" else 0))
    gen = synthetic.Generator(tok, train, ctx, args.seed + 7)
    B = args.batch
    n_syn = int(round(args.synthetic * B))
    # Fixed held-out batch for the validation curve.
    vstarts = np.random.default_rng(1).integers(0, len(held) - ctx - 1, size=args.val_seqs)
    vx = torch.from_numpy(np.stack([held[s:s + ctx + 1].astype(np.int64) for s in vstarts])).to(dev)

    def batch():
        xs = np.empty((B, ctx + 1), np.int64)
        ws = np.ones((B, ctx), np.float32)
        starts = rng.integers(0, len(train) - ctx - 1, size=B - n_syn)
        for i, s in enumerate(starts):
            xs[i] = train[s:s + ctx + 1]
        for i in range(B - n_syn, B):
            xs[i], ws[i] = gen.sample()
        x = torch.from_numpy(xs).pin_memory() if dev.type == "cuda" else torch.from_numpy(xs)
        w = torch.from_numpy(ws).pin_memory() if dev.type == "cuda" else torch.from_numpy(ws)
        return x.to(dev, non_blocking=True), w.to(dev, non_blocking=True)

    def loss_fn(m, x, w):
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            logits = m(input_ids=x[:, :-1], use_cache=False).logits
        nll = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="none")
        return (nll * w.reshape(-1)).sum() / w.sum()

    @torch.no_grad()
    def val_loss():
        model.eval()
        tot = 0.0
        for i in range(0, len(vx), B):
            xb = vx[i:i + B]
            tot += loss_fn(model, xb, torch.ones(xb.shape[0], ctx, device=dev)).item() * xb.shape[0]
        model.train()
        return tot / len(vx)

    log = []
    meta = {"name": name, "params": n_params, "shape": shape, "batch_seqs": B, "ctx": ctx,
            "synthetic_fraction": n_syn / B, "lr": args.lr, "wd": args.wd,
            "train_stream_tokens": int(len(train)), "heldout_stream_tokens": int(len(held)),
            "torch": torch.__version__, "transformers": transformers.__version__,
            "device": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu", "work": str(args.work),
            "log": log}
    step, tokens, t_start = 0, 0, None
    last_save = last_val = time.time()
    warm = args.warmup_frac
    model.train()
    while True:
        now = time.time()
        p = 0.0 if t_start is None else (now - t_start) / args.train_seconds
        if args.max_steps and step >= args.max_steps or p >= 1.0:
            break
        lr = args.lr * (p / warm if p < warm else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (p - warm) / (1 - warm))))
        if t_start is None:
            lr = args.lr * 1e-3
        for g in opt.param_groups:
            g["lr"] = lr
        x, w = batch()
        opt.zero_grad(set_to_none=True)
        try:
            loss = loss_fn(fwd, x, w)
            loss.backward()
        except Exception as e:  # a compile failure must not cost the run: fall back to eager
            if fwd is model:
                raise
            print(f"[{name}] torch.compile failed ({type(e).__name__}: {e}); eager from here", flush=True)
            fwd = model
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(fwd, x, w)
            loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += B * ctx
        if t_start is None:  # the first step includes compilation; the schedule starts after it
            t_start = time.time()
            if args.deadline:  # end on time even if compilation was slow
                args.train_seconds = min(args.train_seconds, args.deadline - t_start)
            print(f"[{name}] first step (compile) {t_start - now:.1f}s; training for {args.train_seconds:.0f}s",
                  flush=True)
        if step % args.log_every == 0 or step <= 2:
            el = time.time() - t_start
            rec = {"step": step, "tokens": tokens, "sec": round(el, 1), "lr": lr, "loss": round(loss.item(), 4),
                   "grad_norm": round(gn.item(), 3)}
            if time.time() - last_val > args.val_every:
                rec["val_loss"] = round(val_loss(), 4)
                last_val = time.time()
            log.append(rec)
            print(f"[{name}] {json.dumps(rec)} {tokens / max(el, 1e-6) / 1e3:.0f}k tok/s", flush=True)
        if time.time() - last_save > args.save_every:
            meta.update(steps=step, tokens_seen=tokens)
            export(model, name, args.out, args.data, meta)
            last_save = time.time()
    vl = val_loss()
    log.append({"step": step, "tokens": tokens, "sec": round(time.time() - t_start, 1), "val_loss": round(vl, 4)})
    meta.update(steps=step, tokens_seen=tokens, final_val_loss=vl, train_seconds=time.time() - t_start)
    export(model, name, args.out, args.data, meta)
    print(f"[{name}] done: {step} steps, {tokens:,} tokens, val loss {vl:.4f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--work", type=Path, default=Path("/tmp/refmodels_work"))
    ap.add_argument("--models", default="ref-llama,ref-opt")
    ap.add_argument("--device", default=None)
    ap.add_argument("--tiny", action="store_true", help="tiny shapes and a few CPU steps (dry run)")
    ap.add_argument("--train-seconds", type=float, default=390)
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--total-seconds", type=float, default=0,
                    help="wall-clock budget of the whole command from its start (training is cut to fit)")
    ap.add_argument("--deadline", type=float, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--max-docs", type=int, default=None)
    ap.add_argument("--batch", type=int, default=64, help="sequences per step")
    ap.add_argument("--lr", type=float, default=2.5e-3)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--warmup-frac", type=float, default=0.04)
    ap.add_argument("--synthetic", type=float, default=0.18)
    ap.add_argument("--val-seqs", type=int, default=64)
    ap.add_argument("--val-every", type=float, default=45)
    ap.add_argument("--save-every", type=float, default=100)
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--no-prepare", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.models = args.models.split(",")
    if args.tiny:
        args.max_steps = args.max_steps or 6
        args.batch, args.val_seqs, args.log_every = 4, 4, 1
        args.max_docs = args.max_docs or 300
    if args.device is None:
        import torch
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.no_prepare:
        prepare(args)
    if len(args.models) == 1:
        if args.total_seconds and not args.deadline:
            args.deadline = T0 + args.total_seconds
        train_one(args)
        return 0
    # Several models: one process each, concurrently on the same device (small models leave
    # the GPU idle between kernels, so two streams of work overlap).
    procs = []
    deadline = T0 + args.total_seconds if args.total_seconds else 0
    for name in args.models:
        cmd = [sys.executable, __file__, *sys.argv[1:], "--models", name, "--no-prepare",
               "--deadline", str(deadline)]
        procs.append(subprocess.Popen(cmd))
    rc = [p.wait() for p in procs]
    return max(rc)


if __name__ == "__main__":
    sys.exit(main())
