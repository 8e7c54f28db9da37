#!/usr/bin/env python3
"""A Python re-implementation of lm-evaluation-harness's zero-shot scoring, as the
reference for dynsparse's C++ zeroshot metric (tests/experiments/zeroshot_parity_test.cc).

It is deliberately independent of the C++ code: it reads the raw data files under
$DYNSPARSE_DATA, applies each task's lm-eval preprocessing (transcribed from lm-eval's
task YAMLs / utils.py, see docs/tasks.md), builds requests as lm-eval's ConfigurableTask
does, encodes them as lm-eval's HFLM (_encode_pair; add_bos_token=False) and scores them
as HFLM._loglikelihood_tokens does, with Hugging Face transformers in float32.

Two modes:
  requests  (no torch): the request strings of the first --limit documents of every task,
            0-shot and 2-shot (lm-eval's sampler with Python's random.Random(1234)), into
            tests/fixtures/zeroshot/requests.json.
  score     (torch + transformers): per-request token ids, continuation log-likelihoods and
            is_greedy, per-document acc / acc_norm, for piqa, hellaswag and winogrande on
            --model, into tests/fixtures/zeroshot/<model-name>/<task>.json.

Usage:
  DYNSPARSE_DATA=../shared/data python3 tools/parity/lm_eval_reference.py requests
  DYNSPARSE_DATA=../shared/data python3 tools/parity/lm_eval_reference.py score \
      --model tests/fixtures/models/tiny-llama-chat --limit 200 [--device cuda]
"""

from __future__ import annotations

import argparse
import bz2
import json
import math
import os
import random
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "zeroshot"


# ----------------------------------------------------------------------------------------------
# Documents: each task's lm-eval doc_to_text / doc_to_choice / doc_to_target on the raw files.
# A doc is a dict: {"text": str, "choices": [str], "target": str, "gold": int}.
# ----------------------------------------------------------------------------------------------

def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def piqa_docs(data: Path) -> list[dict]:
    rows = read_jsonl(data / "piqa/valid.jsonl")
    labels = (data / "piqa/valid-labels.lst").read_text().split()
    assert len(rows) == len(labels)
    # piqa.yaml: doc_to_text "Question: {{goal}}\nAnswer:", doc_to_choice [sol1, sol2].
    return [{"text": f"Question: {r['goal']}\nAnswer:", "choices": [r["sol1"], r["sol2"]],
             "target": "", "gold": int(l)} for r, l in zip(rows, labels)]


def hellaswag_preprocess(text: str) -> str:
    # hellaswag/utils.py preprocess()
    text = text.strip()
    text = text.replace(" [title]", ". ")
    text = re.sub("\\[.*?\\]", "", text)
    text = text.replace("  ", " ")
    return text


def hellaswag_docs(data: Path) -> list[dict]:
    lines = bz2.open(data / "hellaswag/hellaswag_val_full.txt.bz2", "rt", encoding="utf-8").read()
    lines = lines.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    assert len(lines) % 6 == 0
    docs = []
    for i in range(0, len(lines), 6):
        # The file's first line is activity_label + ": " + ctx (query before preprocess).
        docs.append({"text": hellaswag_preprocess(lines[i]),
                     "choices": [hellaswag_preprocess(e) for e in lines[i + 2:i + 6]],
                     "target": "", "gold": int(lines[i + 1])})
    return docs


def foundry_choices(path: Path, drop: str = "", suffix: str = "") -> list[dict]:
    docs = []
    for r in read_jsonl(path):
        q = r["query"]
        assert q.startswith(drop)
        docs.append({"text": q[len(drop):] + suffix, "choices": list(r["choices"]), "target": "",
                     "gold": int(r["gold"])})
    return docs


def copa_docs(data: Path) -> list[dict]:
    docs = []
    for r in read_jsonl(data / "llm_foundry_icl/copa.jsonl"):
        q = r["query"]
        # llm-foundry: premise[:-1] + ", because"; lm-eval utils.doc_to_text: premise[:-1] + " because".
        head, _, connector = q.rpartition(", ")
        assert connector in ("because", "therefore"), q
        choices = [" " + c[0].lower() + c[1:] for c in r["choices"]]  # utils.doc_to_choice
        docs.append({"text": f"{head} {connector}", "choices": choices, "target": "",
                     "gold": int(r["gold"])})
    return docs


def partial_docs(path: Path, wsc273: bool) -> list[dict]:
    docs = []
    for r in read_jsonl(path):
        cont = r["continuation"]
        if wsc273 and cont and (cont[0].isalnum() or ord(cont[0]) >= 0x80):
            # wsc273 doc_to_target is text[pronoun_loc + len(pronoun):], which starts with the
            # space after the pronoun; llm-foundry stripped it.
            cont = " " + cont
        docs.append({"text": "", "choices": list(r["context_options"]), "target": cont,
                     "gold": int(r["gold"])})
    return docs


def lambada_docs(data: Path) -> list[dict]:
    # lambada_openai.yaml: text = words[:-1] joined, target " " + last word, delimiter "".
    return [{"text": r["context"], "choices": [], "target": " " + r["continuation"], "gold": 0}
            for r in read_jsonl(data / "llm_foundry_icl/lambada_openai.jsonl")]


def rte_docs(data: Path) -> list[dict]:
    return [{"text": f"{r['premise']}\nQuestion: {r['hypothesis']} True or False?\nAnswer:",
             "choices": ["True", "False"], "target": "",
             "gold": 0 if r["label"] == "entailment" else 1}
            for r in read_jsonl(data / "superglue/RTE/val.jsonl")]


def general_detokenize(string: str) -> str:
    string = string.replace(" n't", "n't")
    string = string.replace(" )", ")")
    string = string.replace("( ", "(")
    string = string.replace('" ', '"')
    string = string.replace(' "', '"')
    string = re.sub(r" (['.,])", r"\1", string)
    return string


def wsc_docs(data: Path) -> list[dict]:
    docs = []
    for r in read_jsonl(data / "superglue/WSC/val.jsonl"):
        t = r["target"]
        raw = r["text"]
        pre = " ".join(raw.split()[: t["span2_index"]])
        post = raw[len(pre) + len(t["span2_text"]) + 1:]
        passage = general_detokenize(pre + " *{}*".format(t["span2_text"]) + post)
        text = (f"Passage: {passage}\n"
                f'Question: In the passage above, does the pronoun "*{t["span2_text"]}*" refer to '
                f'"*{t["span1_text"]}*"?\nAnswer:')
        docs.append({"text": text, "choices": ["no", "yes"], "target": "", "gold": int(r["label"])})
    return docs


# name -> (kind, target_delimiter, acc_norm, loader)
TASKS = {
    "piqa": ("mc", " ", True, piqa_docs),
    "hellaswag": ("mc", " ", True, hellaswag_docs),
    "arc_easy": ("mc", " ", True,
                 lambda d: foundry_choices(d / "llm_foundry_icl/arc_easy.jsonl", "", "\nAnswer:")),
    "arc_challenge": ("mc", " ", True,
                      lambda d: foundry_choices(d / "llm_foundry_icl/arc_challenge.jsonl", "",
                                                "\nAnswer:")),
    "openbookqa": ("mc", " ", True, lambda d: foundry_choices(d / "llm_foundry_icl/openbook_qa.jsonl")),
    "winogrande": ("partial", " ", False,
                   lambda d: partial_docs(d / "llm_foundry_icl/winogrande.jsonl", False)),
    "copa": ("mc", " ", False, copa_docs),
    "boolq": ("mc", " ", False,
              lambda d: foundry_choices(d / "llm_foundry_icl/boolq.jsonl", "Passage: ", "\nAnswer:")),
    "rte": ("mc", " ", False, rte_docs),
    "wsc": ("mc", " ", False, wsc_docs),
    "wsc273": ("partial", " ", False,
               lambda d: partial_docs(d / "llm_foundry_icl/winograd_wsc.jsonl", True)),
    "lambada_openai": ("loglikelihood", "", False, lambada_docs),
}


# ----------------------------------------------------------------------------------------------
# WikiText-2 documents for lm-eval's `wikitext` task (EleutherAI/wikitext_document_level).
# ----------------------------------------------------------------------------------------------

def wikitext_pages(data: Path) -> list[str]:
    """The original wiki.test.raw rebuilt (the shared copy has CRLF and no blank lines; the
    tokenized file shows where the " " blank lines were), cut at each top-level heading."""
    raw = [l[:-1] if l.endswith("\r") else l
           for l in (data / "wikitext2/wiki.test.raw").read_text(encoding="utf-8").split("\n")]
    if raw and raw[-1] == "":
        raw.pop()
    tokens = (data / "wikitext2/wiki.test.tokens").read_text(encoding="utf-8").split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()
    it = iter(raw)
    lines = [" " if t.strip() == "" else next(it) for t in tokens] + [""]
    pages, page = [], []
    for line in lines:
        heading = line.replace("= = =", "===").replace("= =", "==").strip()
        if heading.startswith("= ") and heading.endswith(" ="):
            text = "\n".join(page)
            if text.strip():
                pages.append(text)
            page = []
        page.append(line)
    pages.append("\n".join(page))
    return pages


# lm-eval's wikitext_detokenizer, as (kind, pattern, replacement) steps in its order.
WIKITEXT_STEPS = [
    ("str", "s '", "s'"), ("re", r"/' [0-9]/", r"/'[0-9]/"),
    ("str", " @-@ ", "-"), ("str", " @,@ ", ","), ("str", " @.@ ", "."),
    ("str", " : ", ": "), ("str", " ; ", "; "), ("str", " . ", ". "), ("str", " ! ", "! "),
    ("str", " ? ", "? "), ("str", " , ", ", "),
    ("re", r"\(\s*([^\)]*?)\s*\)", r"(\1)"), ("re", r"\[\s*([^\]]*?)\s*\]", r"[\1]"),
    ("re", r"{\s*([^}]*?)\s*}", r"{\1}"), ("re", r"\"\s*([^\"]*?)\s*\"", r'"\1"'),
    ("re", r"'\s*([^']*?)\s*'", r"'\1'"),
    ("str", "= = = =", "===="), ("str", "= = =", "==="), ("str", "= =", "=="),
    ("str", " \u00b0 ", "\u00b0"), ("str", " \n", "\n"), ("str", "\n ", "\n"),
    ("str", " N ", " 1 "), ("str", " 's", "'s"),
]


def wikitext_detokenize(text: str) -> str:
    for kind, a, b in WIKITEXT_STEPS:
        text = text.replace(a, b) if kind == "str" else re.sub(a, b, text)
    return text


def fnv1a64(text: str) -> int:
    h = 0xcbf29ce484222325
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


# ----------------------------------------------------------------------------------------------
# Requests, as lm-eval's ConfigurableTask.fewshot_context + construct_requests build them.
# ----------------------------------------------------------------------------------------------

def example(kind: str, delim: str, doc: dict) -> str:
    if kind == "mc":
        return doc["text"] + delim + doc["choices"][doc["gold"]]
    if kind == "partial":
        return doc["choices"][doc["gold"]] + delim + doc["target"]
    return doc["text"] + delim + doc["target"]


def build_requests(task: str, docs: list[dict], limit: int, num_fewshot: int,
                   seed: int = 1234) -> list[list[tuple[str, str]]]:
    kind, delim, _, _ = TASKS[task]
    rnd = random.Random(seed)
    out = []
    for doc in docs[:limit]:
        fewshot = ""
        if num_fewshot > 0:
            # Few-shot split == evaluation split: draw k + 1, drop the doc itself, keep k.
            drawn = rnd.sample(docs, num_fewshot + 1)
            chosen = [x for x in drawn if x != doc][:num_fewshot]
            fewshot = "".join(example(kind, delim, x) + "\n\n" for x in chosen)
        if kind == "mc":
            reqs = [(fewshot + doc["text"], delim + c) for c in doc["choices"]]
        elif kind == "partial":
            reqs = [(fewshot + c, delim + doc["target"]) for c in doc["choices"]]
        else:
            reqs = [(fewshot + doc["text"], delim + doc["target"])]
        out.append(reqs)
    return out


# ----------------------------------------------------------------------------------------------
# Scoring, as HFLM does it.
# ----------------------------------------------------------------------------------------------

def encode_pair(tok, context: str, continuation: str) -> tuple[list[int], list[int]]:
    if context == "":
        prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        return [prefix], tok.encode(continuation, add_special_tokens=False)
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    whole = tok.encode(context + continuation, add_special_tokens=False)
    ctx = tok.encode(context, add_special_tokens=False)
    return ctx, whole[len(ctx):]


def file_checksum(path: Path) -> str:
    """sum(word_i * (2i + 1)) mod 2**64 over the file's little-endian u64 words (tail zero-padded):
    lets the C++ test notice a model file that changed since the fixture was made."""
    import numpy as np

    data = path.read_bytes()
    data += b"\0" * (-len(data) % 8)
    words = np.frombuffer(data, dtype="<u8")
    weights = np.arange(len(words), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    with np.errstate(over="ignore"):
        return str(int((words * weights).sum(dtype=np.uint64)))


def max_length_of(model, tok) -> int:
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        if hasattr(model.config, attr):
            return getattr(model.config, attr)
    return 2048


def score(args) -> None:
    import torch
    import transformers

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    tok = transformers.AutoTokenizer.from_pretrained(args.model)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        args.model, dtype=torch.float32, attn_implementation="eager").to(device).eval()
    max_len = max_length_of(model, tok)
    name = Path(args.model).name
    out_dir = (Path(args.out) if args.out else FIXTURES) / name
    out_dir.mkdir(parents=True, exist_ok=True)
    data = Path(os.environ["DYNSPARSE_DATA"])
    if args.wikitext_docs >= 0:
        score_wikitext(args, tok, model, max_len, device, out_dir)
    for task in args.tasks:
        kind, delim, has_norm, loader = TASKS[task]
        t0 = time.time()
        docs = loader(data)
        requests = build_requests(task, docs, args.limit, 0)
        rows, accs, norms = [], [], []
        for doc, reqs in zip(docs, requests):
            results = []
            for ctx, cont in reqs:
                ctx_enc, cont_enc = encode_pair(tok, ctx, cont)
                inp = (ctx_enc + cont_enc)[-(max_len + 1):][:-1]
                with torch.no_grad():
                    logits = model(torch.tensor([inp], device=device)).logits[0].float()
                    # lm-eval's HFLM: log_softmax in the model's dtype unless softmax_dtype.
                    logp = torch.nn.functional.log_softmax(
                        logits.to(getattr(torch, args.softmax_dtype)), dim=-1)
                n = len(cont_enc)
                sel = logp[len(inp) - n:len(inp)]
                target = torch.tensor(cont_enc, device=device)
                greedy = bool((sel.argmax(dim=-1) == target).all())
                token_lls = sel.gather(1, target.unsqueeze(-1))
                # lm-eval sums the float32 token log-probs in float32 (logprob_f32, which decides
                # pred as in lm-eval); "logprob" sums the same float32 values in float64, free of
                # the float32 rounding of a sum of hundreds of terms (~1e-4 at |ll| ~ 2000).
                results.append({"context": ctx, "continuation": cont,
                                "context_tokens": ctx_enc, "continuation_tokens": cont_enc,
                                "logprob": float(token_lls.double().sum()),
                                "logprob_f32": float(token_lls.sum()), "is_greedy": greedy})
            lls = [r["logprob_f32"] for r in results]
            pred = max(range(len(lls)), key=lambda i: (lls[i], -i))
            lens = [float(len(c)) for c in doc["choices"]]
            normed = [l / n for l, n in zip(lls, lens)]
            pred_norm = max(range(len(normed)), key=lambda i: (normed[i], -i))
            acc = 1.0 if pred == doc["gold"] else 0.0
            acc_norm = 1.0 if pred_norm == doc["gold"] else 0.0
            accs.append(acc)
            norms.append(acc_norm)
            rows.append({"gold": doc["gold"], "pred": pred, "pred_norm": pred_norm,
                         "acc": acc, "acc_norm": acc_norm, "requests": results})
        result = {
            "task": task, "model": name, "limit": args.limit, "num_fewshot": 0,
            "model_checksum": file_checksum(Path(args.model) / "model.safetensors"),
            "max_length": max_len, "add_bos_token": False, "softmax_dtype": args.softmax_dtype,
            "acc": sum(accs) / len(accs), "acc_norm": sum(norms) / len(norms) if has_norm else None,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "device": str(device) + (f" ({torch.cuda.get_device_name()})" if device.type == "cuda" else ""),
            "docs": rows,
        }
        path = out_dir / f"{task}.json"
        path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{task}: {len(rows)} docs, acc {result['acc']:.4f}"
              + (f" acc_norm {result['acc_norm']:.4f}" if has_norm else "")
              + f" ({time.time() - t0:.1f}s) -> {path}", file=sys.stderr)


def rolling_windows(tokens: list[int], prefix: int, max_len: int):
    """(input, targets) pairs of lm-eval's loglikelihood_rolling with context_len 1."""
    first = min(max_len, len(tokens))
    yield [prefix] + tokens[:first - 1], tokens[:first]
    done = first
    while done < len(tokens):
        n = min(len(tokens) - done, max_len)
        end = done + n
        context = tokens[end - max_len - 1:end - 1]
        context = context[:len(context) - (n - 1)]   # make_disjoint_window
        full = (context + tokens[end - n:end])[-(max_len + 1):]
        yield full[:-1], tokens[end - n:end]
        done = end


def score_wikitext(args, tok, model, max_len, device, out_dir) -> None:
    import torch

    data = Path(os.environ["DYNSPARSE_DATA"])
    pages = wikitext_pages(data)[: args.wikitext_docs or None]
    prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    docs, total, words, nbytes = [], 0.0, 0, 0
    t0 = time.time()
    for page in pages:
        ids = tok.encode(wikitext_detokenize(page), add_special_tokens=False)
        ll = 0.0
        for inp, targets in rolling_windows(ids, prefix, max_len):
            with torch.no_grad():
                logits = model(torch.tensor([inp], device=device)).logits[0].float()
                logp = torch.nn.functional.log_softmax(logits, dim=-1)[len(inp) - len(targets):]
            ll += float(logp.gather(1, torch.tensor(targets, device=device).unsqueeze(-1)).double().sum())
        w, b = len(re.split(r"\s+", page)), len(page.encode("utf-8"))
        docs.append({"tokens": len(ids), "loglikelihood": ll, "words": w, "bytes": b})
        total, words, nbytes = total + ll, words + w, nbytes + b
    result = {"task": "wikitext", "model": Path(args.model).name, "max_length": max_len,
              "model_checksum": file_checksum(Path(args.model) / "model.safetensors"),
              "documents": len(docs), "word_perplexity": math.exp(-total / words),
              "byte_perplexity": math.exp(-total / nbytes),
              "bits_per_byte": -total / nbytes / math.log(2), "docs": docs}
    path = out_dir / "wikitext.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wikitext: {len(docs)} docs, word ppl {result['word_perplexity']:.4f} "
          f"({time.time() - t0:.1f}s) -> {path}", file=sys.stderr)


def requests_fixture(args) -> None:
    data = Path(os.environ["DYNSPARSE_DATA"])
    fixture = {"limit": args.limit, "seed": 1234, "tasks": {}}
    for task, (_, _, _, loader) in TASKS.items():
        docs = loader(data)
        fixture["tasks"][task] = {
            "docs": len(docs),
            "0shot": build_requests(task, docs, args.limit, 0),
            "2shot": build_requests(task, docs, args.limit, 2),
        }
    pages = wikitext_pages(data)
    fixture["wikitext"] = [{"words": len(re.split(r"\s+", p)), "bytes": len(p.encode("utf-8")),
                            "detokenized_fnv1a64": str(fnv1a64(wikitext_detokenize(p))),
                            "detokenized_chars": len(wikitext_detokenize(p))} for p in pages]
    # Python's random.sample itself, for the C++ PythonRandom test.
    rnd = random.Random(1234)
    fixture["python_random_1234"] = {
        "sample": [[n, k, rnd.sample(range(n), k)] for n, k in
                   [(10, 3), (1838, 1), (1838, 6), (40, 26), (5, 5), (100000, 11)]],
    }
    path = Path(args.out) if args.out else FIXTURES / "requests.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("requests")
    r.add_argument("--limit", type=int, default=8)
    r.add_argument("--out", default="")
    s = sub.add_parser("score")
    s.add_argument("--model", required=True)
    s.add_argument("--tasks", nargs="+", default=["piqa", "hellaswag", "winogrande"])
    s.add_argument("--limit", type=int, default=200)
    s.add_argument("--device", default="cpu")
    s.add_argument("--softmax-dtype", default="float32", choices=["float32", "float64"],
                   help="lm-eval's softmax_dtype (default: the model's float32, as lm-eval)")
    s.add_argument("--wikitext-docs", type=int, default=0,
                   help="also score lm-eval wikitext on the first N documents (0 = all, -1 = skip)")
    s.add_argument("--out", default="", help="folder holding <model-name>/ (default the fixtures)")
    args = p.parse_args()
    if "DYNSPARSE_DATA" not in os.environ:
        sys.exit("set DYNSPARSE_DATA to the shared data folder")
    requests_fixture(args) if args.mode == "requests" else score(args)


if __name__ == "__main__":
    main()
