"""Synthetic in-context retrieval sequences mixed into the reference models' training data.

Three kinds, each a needle (or several) hidden in real corpus text and a question at the end
whose answer is only in the needle: a pass key, key-value lookup among several pairs, and a
magic word. They teach the models to fetch a few distant tokens, which is what LazyLLM-style
token pruning must preserve. The same templates are used by evaluate.py's passkey check, so
keep the strings in one place.
"""

from __future__ import annotations

import numpy as np

PASSKEY_NEEDLE = "\nThe pass key is {v}. Remember it. {v} is the pass key.\n"
PASSKEY_QUESTION = "\nWhat is the pass key? The pass key is"
KV_NEEDLE = "\nThe secret number of {k} is {v}.\n"
KV_QUESTION = "\nWhat is the secret number of {k}? The secret number of {k} is"
WORD_NEEDLE = "\nThe special magic word is {v}.\n"
WORD_QUESTION = "\nWhat is the special magic word? The special magic word is"


def random_number(rng: np.random.Generator) -> str:
    digits = int(rng.integers(3, 8))
    return str(int(rng.integers(10 ** (digits - 1), 10 ** digits)))


def random_number_py(rng) -> str:
    """random_number for a stdlib random.Random (same distribution)."""
    digits = rng.randint(3, 7)
    return str(rng.randint(10 ** (digits - 1), 10 ** digits - 1))


def word_pool(tokenizer) -> list[str]:
    """Plain lowercase words that are single tokens (with a leading space) in the vocabulary."""
    words = sorted(t[1:] for t in tokenizer.get_vocab() if t.startswith("\u0120") and t[1:].isalpha()
                   and t[1:].islower() and 4 <= len(t) - 1 <= 9)
    return words or ["apple", "river", "candle", "garden"]


class Generator:
    """Builds token sequences of exactly `length` ids plus per-token loss weights."""

    def __init__(self, tokenizer, stream: np.ndarray, length: int, seed: int, answer_weight: float = 3.0):
        self.tok = tokenizer
        self.stream = stream
        self.length = length
        self.rng = np.random.default_rng(seed)
        self.words = word_pool(tokenizer)
        self.answer_weight = answer_weight

    def enc(self, s: str) -> list[int]:
        return self.tok.encode(s, add_special_tokens=False).ids

    def window(self, n: int) -> np.ndarray:
        start = int(self.rng.integers(0, len(self.stream) - n - 1))
        return self.stream[start:start + n]

    def sample(self) -> tuple[np.ndarray, np.ndarray]:
        """Returns (ids [length+1], weights [length]) where weights[i] scores predicting ids[i+1]."""
        rng = self.rng
        kind = int(rng.integers(0, 3))
        if kind == 0:
            v = random_number(rng)
            needles = [PASSKEY_NEEDLE.format(v=v)]
            question, answer = PASSKEY_QUESTION, f" {v}."
        elif kind == 1:
            n = int(rng.integers(2, 9))
            keys = list(rng.choice(self.words, size=n, replace=False))
            vals = [random_number(rng) for _ in keys]
            needles = [KV_NEEDLE.format(k=k, v=v) for k, v in zip(keys, vals)]
            q = int(rng.integers(0, n))
            question, answer = KV_QUESTION.format(k=keys[q]), f" {vals[q]}."
        else:
            v = str(rng.choice(self.words))
            needles = [WORD_NEEDLE.format(v=v)]
            question, answer = WORD_QUESTION.format(), f" {v}."
        needle_ids = [self.enc(s) for s in needles]
        q_ids, a_ids = self.enc(question), self.enc(answer)
        fixed = sum(map(len, needle_ids)) + len(q_ids) + len(a_ids) + 1
        # Prompt length uniform over the context, so answers come from every distance.
        total = int(rng.integers(fixed + 16, self.length + 1)) if fixed + 16 < self.length else fixed
        filler = self.window(total - fixed)
        cuts = np.sort(rng.integers(0, len(filler) + 1, size=len(needle_ids)))
        parts, prev = [np.array([0])], 0  # BOS
        for c, nid in zip(cuts, needle_ids):
            parts += [filler[prev:c], np.array(nid)]
            prev = c
        parts += [filler[prev:], np.array(q_ids)]
        prompt = np.concatenate(parts).astype(np.int64)
        seq = np.concatenate([prompt, np.array(a_ids, dtype=np.int64)])
        rest = self.length + 1 - len(seq)
        if rest > 0:  # fill the remaining context with ordinary text
            seq = np.concatenate([seq, self.window(rest).astype(np.int64)])
        seq = seq[:self.length + 1]
        w = np.ones(self.length, dtype=np.float32)
        a0 = len(prompt) - 1  # position whose target is the first answer token
        w[a0:min(a0 + len(a_ids), self.length)] = self.answer_weight
        return seq, w
