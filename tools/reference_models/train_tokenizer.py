#!/usr/bin/env python3
"""Train the reference models' byte-level BPE tokenizer on the training split of the corpus.

Usage:
    python3 tools/reference_models/train_tokenizer.py --data .device_inputs/refmodels [--vocab 8192]

Writes <data>/tokenizer.json and <data>/tokenizer_config.json. Specials: <s>=0 (BOS), </s>=1
(EOS, ends every training document), <pad>=2. The post-processor prepends <s> to every
encoding, so `tokenizer(text)` and dynsparse's loader both start a text with BOS, exactly as
training saw each document. Pre-tokenizer: GPT-2's byte-level split regex (no prefix space), which
dynsparse's HF tokenizer loader implements. Needs the `tokenizers` package.
"""

from __future__ import annotations

import argparse
import json
import lzma
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

SPECIALS = ["<s>", "</s>", "<pad>"]


def docs(path: Path):
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)["text"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--vocab", type=int, default=8192)
    args = ap.parse_args()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=args.vocab, min_frequency=2, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(docs(args.data / "train.jsonl.xz"), trainer=trainer)
    for i, t in enumerate(SPECIALS):
        assert tok.token_to_id(t) == i, (t, tok.token_to_id(t))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B:1", special_tokens=[("<s>", 0)])
    tok.save(str(args.data / "tokenizer.json"))
    (args.data / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "pad_token": "<pad>", "add_bos_token": True, "add_eos_token": False,
        "clean_up_tokenization_spaces": False, "model_max_length": 2048}, indent=2) + "\n")
    enc = tok.encode("The quick brown fox, 1913 Webster.\nIn the beginning God created")
    print(f"vocab {tok.get_vocab_size()}; sample {enc.tokens}")


if __name__ == "__main__":
    main()
