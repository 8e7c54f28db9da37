#!/usr/bin/env python3
"""Writes seed inputs for the fuzz targets into OUT/<target>/, from the
repository's fixtures and (when given) the shared data directory. Seeds are
made at run time so no copies of shared data are committed.
Usage: fuzz_seeds.py REPO OUT [DATA_DIR]"""
import glob
import json
import os
import struct
import sys

repo, out = sys.argv[1], sys.argv[2]
data = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
fixtures = os.path.join(repo, "tests/fixtures")


def put(target, name, payload):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(payload)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def seed_name(path):
    return os.path.relpath(path, repo).replace("/", "_")


# Small checkpoints whole; big ones only up to the end of the header, since
# libFuzzer mutates slowly on inputs of hundreds of KB.
for path in glob.glob(f"{fixtures}/models/*/*.safetensors"):
    raw = read(path)
    if len(raw) > 150_000:
        raw = raw[: 8 + struct.unpack("<Q", raw[:8])[0]]
    put("safetensors_fuzz", seed_name(path), raw)
for path in glob.glob(f"{fixtures}/models/*/model.safetensors.index.json"):
    put("sharded_index_fuzz", seed_name(path), read(path))
for path in glob.glob(f"{fixtures}/models/*/config.json"):
    put("hf_config_fuzz", seed_name(path), read(path))

tok_dir = f"{fixtures}/tokenizers"
put("tokenizer_json_fuzz", "llama3_style", read(f"{tok_dir}/llama3_style/tokenizer.json"))
model = json.loads(read(f"{tok_dir}/llama3_style/tokenizer.json"))["model"]
merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
put("vocab_merges_fuzz", "llama3_style",
    json.dumps(model["vocab"]).encode() + b"\0" +
    ("#version: 0.2\n" + "\n".join(merges) + "\n").encode())
for path in glob.glob(f"{tok_dir}/*/expected.json"):
    for i, text in enumerate(json.loads(read(path))["texts"]):
        put("encode_decode_fuzz", f"{seed_name(path)}_{i}", text.encode())

# llama2.c: seven int32 header fields plus the real file size (see the
# target); tokenizer.bin prefixed by the 2-byte vocab size it is read with.
put("llama2c_checkpoint_fuzz", "tiny",
    struct.pack("<7i", 64, 172, 5, 8, 4, 512, 512) + struct.pack("<Q", 1056540))
if data:
    for path in glob.glob(f"{data}/models/*/*.bin"):
        raw = read(path)
        if "tok" in os.path.basename(path):  # tok512.bin: a 512-token vocab
            put("llama2c_tokenizer_fuzz", os.path.basename(path),
                struct.pack("<H", 512) + raw)
        else:
            put("llama2c_checkpoint_fuzz", os.path.basename(path),
                raw[:28] + struct.pack("<Q", len(raw)))
    for path in glob.glob(f"{data}/tokenizers/*/llama2c_tokenizer.bin"):
        put("llama2c_tokenizer_fuzz", "llama2c_32000",
            struct.pack("<H", 32000) + read(path))
put("llama2c_tokenizer_fuzz", "empty_vocab", struct.pack("<H", 0) + struct.pack("<i", 0))

# Experiment configs: every shipped config (includes are not followed by the
# target, so the base file is a seed of its own).
for path in glob.glob(f"{repo}/configs/**/*.yaml", recursive=True):
    put("experiment_config_fuzz", seed_name(path), read(path))
for path in glob.glob(f"{repo}/results/*/results.jsonl"):
    put("results_file_fuzz", seed_name(path), read(path)[:20000])


def head_lines(raw, n):
    return b"\n".join(raw.split(b"\n")[:n]) + b"\n"


# Task files: selector byte (see task_files_fuzz.cc) + the first lines.
if data:
    foundry = f"{data}/llm_foundry_icl"
    piqa = head_lines(read(f"{data}/piqa/valid.jsonl"), 4)
    labels = head_lines(read(f"{data}/piqa/valid-labels.lst"), 4)
    put("task_files_fuzz", "piqa", b"\0" + piqa + b"\0" + labels)
    import bz2
    hs = bz2.decompress(read(f"{data}/hellaswag/hellaswag_val_full.txt.bz2"))
    put("task_files_fuzz", "hellaswag", b"\1" + head_lines(hs, 12))
    for selector, name in [(2, "boolq"), (2, "arc_easy"), (3, "copa"),
                           (4, "winogrande"), (4, "winograd_wsc"),
                           (5, "lambada_openai")]:
        put("task_files_fuzz", name,
            bytes([selector]) + head_lines(read(f"{foundry}/{name}.jsonl"), 3))
    put("task_files_fuzz", "rte",
        b"\6" + head_lines(read(f"{data}/superglue/RTE/val.jsonl"), 3))
    put("task_files_fuzz", "wsc",
        b"\7" + head_lines(read(f"{data}/superglue/WSC/val.jsonl"), 3))

# DejaVu's predictor and calibration folders for the opt-prenorm fixture
# (dejavu_files_fuzz's layout: a selector byte, then 4-byte-length chunks).
fixture_fingerprint = "opt L2 d64 ffn256 H4 KV4 hd16 V512 relu"
input_convention = (
    "lookahead: mlp[l] reads the residual entering layer l's attention; "
    "heads[l] reads the residual entering layer l-1's MLP (layer 0: the "
    "embeddings)")


def chunk(payload):
    return struct.pack("<I", len(payload)) + payload


def safetensors(tensors, metadata):
    header, offset, blobs = {"__metadata__": metadata}, 0, []
    for name, shape in tensors:
        size = 2
        for n in shape:
            size *= n
        header[name] = {"dtype": "F16", "shape": shape,
                        "data_offsets": [offset, offset + size]}
        blobs.append(bytes((i * 7) % 251 for i in range(size)))
        offset += size
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


shapes = {"mlp": ([4, 64], [256, 4]), "heads": ([2, 64], [4, 2])}
tensors = [(f"layers.{l}.{kind}.{w}", shapes[kind][i])
           for l in range(2) for kind in ("mlp", "heads")
           for i, w in enumerate(("w1", "w2"))]
predictors_json = json.dumps({
    "format": "dynsparse-dejavu-predictors/1",
    "model_fingerprint": fixture_fingerprint, "input": input_convention,
    "num_layers": 2, "mlp_rank": 4, "head_rank": 2}).encode()
put("dejavu_files_fuzz", "predictors",
    b"\0" + chunk(predictors_json) +
    safetensors(tensors, {"model_fingerprint": fixture_fingerprint}))
for name, tokens in (("calibration", 3), ("calibration_huge_count", 10**12)):
    calibration_json = json.dumps({
        "format": "dynsparse-dejavu-calibration/1",
        "model_fingerprint": fixture_fingerprint, "input": input_convention,
        "tokens": tokens}).encode()
    put("dejavu_files_fuzz", name,
        b"\1" + chunk(calibration_json) + chunk(bytes(3 * 64 * 2)) +
        bytes(range(3 * 32)))
