#!/usr/bin/env python3
"""Tokenizer goldens from llama.cpp for every pre-tokenizer family Speculum supports (issue #23).

The pre-tokenizer is independent of the vocabulary: llama.cpp's test vocabularies in ../shared/vocab (llama-bpe's
128k and qwen2's 151k merges) are re-labelled with each family's tokenizer.ggml.pre (`oracle set`), and llama.cpp
tokenizes llama.cpp's own test texts (the vocabulary's .inp) and ours (tests/core/golden/tokenizer/extra.inp) with
them. The SPM vocabulary is also checked without a space prefix (Gemma's setting). One JSON per base vocabulary:

    {"base": "ggml-vocab-llama-bpe.gguf", "set": {KEY: VALUE}, "families": {PRE: {"inp": [[ids]...], "extra": [...]}}}

    tools/parity/tokenizer_goldens.py --oracle /tmp/oracle/build/oracle --shared ../shared \
        --out tests/core/golden/tokenizer
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# Every BPE family of core/model/tokenizer_bpe.cpp (kept in step by TokenizerFamilies.EveryFamilyHasAGolden).
FAMILIES = ["gpt-2", "phi-2", "mpt", "olmo", "jais", "gigachat", "exaone4", "llama-bpe", "llama3", "llama-v3", "falcon3",
            "pixtral", "dbrx", "smaug-bpe", "glm4", "chatglm-bpe", "qwen2", "deepseek-r1-qwen", "megrez", "stablelm2",
            "qwen35", "deepseek-llm", "deepseek-coder", "deepseek-v3", "falcon", "starcoder", "refact", "codeshell",
            "exaone", "minerva-7b", "command-r", "smollm", "tekken", "gpt-4o", "llama4", "bloom", "poro-chat",
            "gpt3-finnish", "viking"]
BASES = {"llama-bpe": [("tokenizer.ggml.pre", f) for f in FAMILIES],
         "qwen2": [("tokenizer.ggml.pre", f) for f in FAMILIES],
         "llama-spm": [("tokenizer.ggml.add_space_prefix", "false"), ("tokenizer.ggml.add_space_prefix", "true")]}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")


def ids_of(oracle, gguf, inp, tmp):
    out = os.path.join(tmp, "ids.out")
    run([oracle, "cases", gguf, inp, out])
    return [[int(x) for x in line.split()] for line in open(out)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    extra = os.path.join(a.out, "extra.inp")
    with tempfile.TemporaryDirectory() as tmp:
        for base, settings in BASES.items():
            src = os.path.join(a.shared, "vocab", f"ggml-vocab-{base}.gguf")
            golden = {"base": os.path.basename(src), "families": {}}
            for key, value in settings:
                gguf = os.path.join(tmp, "v.gguf")
                run([a.oracle, "set", src, gguf, key, value])
                golden["key"] = key
                golden["families"][value] = {"inp": ids_of(a.oracle, gguf, src + ".inp", tmp),
                                             "extra": ids_of(a.oracle, gguf, extra, tmp)}
                print(f"{base} {key}={value}: ok")
            with open(os.path.join(a.out, f"{base}.json"), "w") as f:
                json.dump(golden, f, separators=(",", ":"))
                f.write("\n")


if __name__ == "__main__":
    main()
