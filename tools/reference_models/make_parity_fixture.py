#!/usr/bin/env python3
"""HF-logits parity fixtures for the committed reference models (models/ref-*).

Usage:
    python3 tools/reference_models/make_parity_fixture.py [--models ref-llama,ref-opt]

For each model writes tests/fixtures/models/<name>/reference.safetensors + reference.json in the
layout of tools/fixtures/make_model_fixtures.py (input_ids, logits, decode_logits, ppl_ids), but
with real text as input and without a copy of the weights: reference.json's "model_dir" names the
repo-relative folder the parity test loads the model from. References are f32 CPU forwards
(attn_implementation="eager") of the fp16 checkpoint as transformers loads it; "logit_tolerance" is
derived from the f32-vs-f64 difference of that forward (trained weights have large activations).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "fixtures"))
import make_model_fixtures as mmf  # noqa: E402

TEXT = ("The Collaborative International Dictionary of English is derived from Webster's Revised "
        "Unabridged Dictionary of 1913. In the beginning God created the heaven and the earth. "
        "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, "
        "seemed to unite some of the best blessings of existence. The pass key is 52817. Remember it. "
        "A process that forks a child waits for it with waitpid() and reads its exit status. "
        "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
        "must be in want of a wife. What is the pass key? The pass key is 52817.")


def make(name: str) -> dict:
    import torch
    import transformers
    from safetensors.torch import save_file
    from tokenizers import Tokenizer

    mdir = REPO / "models" / name
    tok = Tokenizer.from_file(str(mdir / "tokenizer.json"))
    ids = tok.encode(TEXT).ids
    if len(ids) < mmf.PPL_LEN:
        raise RuntimeError(f"reference text has {len(ids)} tokens, need {mmf.PPL_LEN}")
    model = mmf.load_model(transformers.AutoModelForCausalLM, mdir)
    input_ids = torch.tensor([ids[:mmf.INPUT_LEN]], dtype=torch.int64)
    ppl_ids = torch.tensor([ids[:mmf.PPL_LEN]], dtype=torch.int64)
    logits = mmf.forward_logits(model, input_ids)
    # Float noise floor: trained weights give large activations (OPT's reach ~50), so f32
    # forwards differ from f64 by more than the random fixtures' fixed 1e-4 tolerance.
    m64 = mmf.load_model(transformers.AutoModelForCausalLM, mdir).double()
    with torch.no_grad():
        f64 = m64(input_ids=input_ids, use_cache=False).logits[0]
    noise = float((logits.double() - f64).abs().max())
    tolerance = max(1e-4, 4 * noise)
    decode = mmf.incremental_decode_logits(model, input_ids, mmf.PREFILL_LEN)
    decode_diff = float((decode - logits[mmf.PREFILL_LEN:]).abs().max())
    ppl = mmf.perplexity_exact(model, ppl_ids, mmf.PPL_CONTEXT, mmf.PPL_STRIDE)
    out = REPO / "tests" / "fixtures" / "models" / name
    out.mkdir(parents=True, exist_ok=True)
    save_file({"input_ids": input_ids, "logits": logits.contiguous(), "decode_logits": decode.contiguous(),
               "ppl_ids": ppl_ids}, str(out / "reference.safetensors"),
              metadata={"generator": "tools/reference_models/make_parity_fixture.py"})
    ref = {"model": name, "model_dir": f"models/{name}", "architecture": model.config.architectures[0],
           "transformers": transformers.__version__, "torch": torch.__version__,
           "dtype": "float32 compute of the float16 checkpoint", "attn_implementation": "eager",
           "reference_device": "cpu", "text": TEXT, "input_ids_len": mmf.INPUT_LEN,
           "decode": {"prefill": mmf.PREFILL_LEN, "steps": mmf.INPUT_LEN - mmf.PREFILL_LEN,
                      "max_abs_diff_vs_full_forward": decode_diff},
           "logits_stats": {"std": float(logits.std()), "max_abs": float(logits.abs().max()),
                            "max_abs_diff_float32_vs_float64": noise},
           "logit_tolerance": tolerance,
           "logit_tolerance_note": "max(1e-4, 4 x the float32-vs-float64 difference of the HF forward)",
           "perplexity": ppl}
    (out / "reference.json").write_text(json.dumps(ref, indent=2) + "\n")
    for p in out.iterdir():
        p.chmod(0o644)
    return {"name": name, "ppl": ppl["ppl"], "decode_diff": decode_diff, "logit_max": ref["logits_stats"]["max_abs"],
            "f64_noise": noise, "tolerance": tolerance}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="ref-llama,ref-opt")
    args = ap.parse_args()
    for name in args.models.split(","):
        print(make(name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
