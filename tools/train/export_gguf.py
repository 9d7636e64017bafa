#!/usr/bin/python3
# Exports a checkpoint from train.py to a llama.cpp-compatible GGUF (arch `llama`, byte-level BPE `gpt2` tokenizer):
# matrices F16 or BF16 (--type), norms F32, no q/k permutation (the model was trained with adjacent-pair RoPE, ggml's normal mode).
# Then re-reads the file and checks the numpy reference forward (ref_forward.py) against the torch model.
# Usage: export_gguf.py --ckpt runs/target.pt --name speculum-target --out ../../resources/models/x.gguf
import argparse
import dataclasses
import json
import os
import sys

import numpy as np
import torch

from bpe import Tokenizer
from gguf import GGML_BF16, GGML_F16, GGML_F32, T_INT32, T_STRING, GgufWriter
from model import Config, Llama

HERE = os.path.dirname(os.path.abspath(__file__))


def load_model(ckpt_path):
    ck = torch.load(ckpt_path, map_location="cpu")
    cfg = Config(**ck["config"])
    model = Llama(cfg)
    model.load_state_dict(ck["state_dict"])
    model.eval()
    return model, ck.get("metrics", {})


def block_tensors(p, b):
    """(gguf name, torch tensor) of one llama block `b` (model.py's Block names) under prefix p ("blk.3.")."""
    return [(p + "attn_norm.weight", b.attn_norm.weight), (p + "attn_q.weight", b.wq.weight),
            (p + "attn_k.weight", b.wk.weight), (p + "attn_v.weight", b.wv.weight),
            (p + "attn_output.weight", b.wo.weight), (p + "ffn_norm.weight", b.ffn_norm.weight),
            (p + "ffn_gate.weight", b.w_gate.weight), (p + "ffn_up.weight", b.w_up.weight),
            (p + "ffn_down.weight", b.w_down.weight)]


def gguf_tensors(model):
    """(gguf name, torch tensor) in llama.cpp's order; shapes are torch's (out, in)."""
    out = [("token_embd.weight", model.tok_embd.weight)]
    for i, b in enumerate(model.blocks):
        out += block_tensors("blk.%d." % i, b)
    out += [("output_norm.weight", model.norm.weight), ("output.weight", model.output.weight)]
    return out


def add_llama_keys(w, cfg, block_count):
    """The llama.* shape keys of config `cfg`, with `block_count` blocks."""
    w.add_uint32("llama.context_length", cfg.n_ctx)
    w.add_uint32("llama.embedding_length", cfg.n_embd)
    w.add_uint32("llama.block_count", block_count)
    w.add_uint32("llama.feed_forward_length", cfg.n_ff)
    w.add_uint32("llama.attention.head_count", cfg.n_head)
    w.add_uint32("llama.attention.head_count_kv", cfg.n_head_kv)
    w.add_uint32("llama.rope.dimension_count", cfg.head_dim)
    w.add_float32("llama.rope.freq_base", cfg.rope_base)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", cfg.norm_eps)
    w.add_uint32("llama.vocab_size", cfg.n_vocab)


MATRIX_TYPES = {"f16": (GGML_F16, 1), "bf16": (GGML_BF16, 32)}  # ggml type, LLAMA_FTYPE_MOSTLY_*


def build_gguf(model, tok, name, description, wtype="f16"):
    cfg = model.cfg
    w = GgufWriter()
    w.add_string("general.architecture", "llama")
    w.add_string("general.name", name)
    w.add_string("general.description", description)
    w.add_uint32("general.alignment", 32)
    add_llama_keys(w, cfg, cfg.n_layer)
    w.add_uint32("general.file_type", MATRIX_TYPES[wtype][1])
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "gpt-2")  # llama.cpp's name for the GPT-2 pre-tokenizer
    w.add_array("tokenizer.ggml.tokens", T_STRING, tok.tokens)
    w.add_array("tokenizer.ggml.token_type", T_INT32, tok.token_types())
    w.add_array("tokenizer.ggml.merges", T_STRING, ["%s %s" % m for m in tok.merges])
    w.add_uint32("tokenizer.ggml.bos_token_id", tok.bos_id)
    w.add_uint32("tokenizer.ggml.eos_token_id", tok.eos_id)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    for gname, t in gguf_tensors(model):
        a = t.detach().float().numpy()
        w.add_tensor(gname, a, GGML_F32 if a.ndim == 1 else MATRIX_TYPES[wtype][0])
    return w


def f16_rounded(model, wtype="f16"):
    """A copy of the model whose matrices are rounded to F16 (or BF16) exactly as stored in the GGUF (norms stay
    F32)."""
    m = Llama(model.cfg)
    m.load_state_dict(model.state_dict())
    with torch.no_grad():
        for _, t in gguf_tensors(m):
            if t.dim() == 2:
                t.copy_(t.half().float() if wtype == "f16" else t.bfloat16().float())
    m.eval()
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "data", "tokenizer.json"))
    ap.add_argument("--type", choices=sorted(MATRIX_TYPES), default="f16", help="storage type of the matrices")
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, metrics = load_model(args.ckpt)
    tok = Tokenizer.load(args.tokenizer)
    if len(tok.tokens) != model.cfg.n_vocab:
        raise SystemExit("tokenizer has %d tokens, model %d" % (len(tok.tokens), model.cfg.n_vocab))
    desc = "Speculum bundled %s model: %d parameters, %d steps, trained by tools/train on KJV, Python stdlib, NumPy/SymPy/mpmath, SQLite docs" % (
        model.cfg.name, model.n_params(), metrics.get("steps", 0))
    w = build_gguf(model, tok, args.name, desc, args.type)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    w.write(args.out)
    print("wrote %s (%d bytes, %d tensors)" % (args.out, os.path.getsize(args.out), len(w.tensors)))

    # Validate: numpy forward over the GGUF vs the torch model with F16-rounded weights, on held-out text.
    import ref_forward
    ref = ref_forward.RefModel(args.out)
    m16 = f16_rounded(model, args.type)
    texts = ["In the beginning God created the heaven and the earth.\n", "def main(argv=None):\n    import sys\n"]
    worst = 0.0
    for text in texts:
        ids = tok.encode(text, bos=True)
        with torch.no_grad():
            lt = m16(torch.tensor([ids]))[0].numpy()
        ln = ref.logits(ids)
        err = float(np.max(np.abs(lt - ln)))
        worst = max(worst, err)
        print("max |torch - numpy| logits on %r: %.2e" % (text[:30], err))
    if worst > 1e-3:
        raise SystemExit("export check FAILED: numpy forward over the GGUF disagrees with torch (%.2e)" % worst)
    print("export check passed")
    import hashlib
    with open(args.out, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.splitext(args.ckpt)[0] + ".export.json", "w") as f:
        json.dump({"file": os.path.basename(args.out), "type": args.type, "bytes": os.path.getsize(args.out), "sha256": sha,
                   "max_abs_logit_diff_numpy_vs_torch": worst, "texts": texts}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
