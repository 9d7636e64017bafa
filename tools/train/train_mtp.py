#!/usr/bin/python3
# Trains a multi-token-prediction (MTP, "NextN") layer for the bundled target and writes it as an MTP module: the
# NextN block in llama.cpp's layout (blk.<n_layer>.*, blk.<n_layer>.nextn.*), stored apart from the target's own file
# (docs/models.md "MTP modules"). Development-time only, CPU.
#
# The layer (DeepSeek-V3's MTP module, as llama.cpp's draft-mtp runs it): to draft the token after x_q, it fuses
# u = eh_proj [enorm(embedding(x_q)); hnorm(h_{q-1})] where h is the target's hidden state after its final norm (what
# its LM head reads), runs one llama block of the target's shape on u, and its head norm (shared_head_norm) and head
# (shared_head_head) give the draft logits. A chain's next token reads the layer's own output after the head norm.
# The token embedding is the target's (not stored).
#
# Training (heads.py): the target's final states and greedy next tokens over windows of the training corpus, once;
# then the layer learns the target's greedy token with training-time test over --steps-ttt unrolled steps. The
# block starts from the target's last block, the head and head norm from the target's.
#
# Usage (tools/train/README.md): train_mtp.py --time-budget 1200 --out runs/mtp.pt --export FILE
import argparse
import json
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn

from bpe import Tokenizer
from gguf import GGML_F16, GGML_F32, GgufWriter
from heads import (HERE, Target, TttHead, add_common_args, build_set, evaluate, fit, reference_cases, sha_row,
                   update_card, windows_from)
from model import RMSNorm


class MtpHead(TttHead):
    def __init__(self, n_embd, n_head, n_head_kv, n_ff, n_vocab, n_ctx, eps=1e-5, rope_base=10000.0):
        super().__init__(n_embd, n_head, n_head_kv, n_ff, n_vocab, n_ctx, eps, rope_base)
        self.eh_proj = nn.Linear(2 * n_embd, n_embd, bias=False)
        self.enorm = RMSNorm(n_embd, eps)
        self.hnorm = RMSNorm(n_embd, eps)
        self.attn_norm = RMSNorm(n_embd, eps)
        self.wq = nn.Linear(n_embd, n_head * self.hd, bias=False)
        self.wk = nn.Linear(n_embd, n_head_kv * self.hd, bias=False)
        self.wv = nn.Linear(n_embd, n_head_kv * self.hd, bias=False)
        self.wo = nn.Linear(n_head * self.hd, n_embd, bias=False)
        self.ffn_norm = RMSNorm(n_embd, eps)
        self.w_gate = nn.Linear(n_embd, n_ff, bias=False)
        self.w_up = nn.Linear(n_embd, n_ff, bias=False)
        self.w_down = nn.Linear(n_ff, n_embd, bias=False)
        self.norm = RMSNorm(n_embd, eps)  # shared_head_norm
        self.output = nn.Linear(n_embd, n_vocab, bias=False)  # shared_head_head
        nn.init.normal_(self.eh_proj.weight, std=0.02)

    def start(self, feats):  # the target's state after its final norm
        return feats

    def layer_in(self, emb, g):  # u = eh_proj [enorm(embedding); hnorm(state)]: a llama block's input stream
        u = self.eh_proj(torch.cat((self.enorm(emb), self.hnorm(g)), -1))
        return self.attn_norm(u), u

    def after(self, h):  # the next token reads the layer's output after the head norm
        return self.norm(h)

    def init_from(self, target):
        """The block from the target's last block; the head and head norm from the target's."""
        last = target.m.blocks[-1]
        with torch.no_grad():
            for name in ("attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate", "w_up", "w_down"):
                getattr(self, name).weight.copy_(getattr(last, name).weight)
            self.output.weight.copy_(target.m.output.weight)
            self.norm.weight.copy_(target.m.norm.weight)


def export(head, target, path, meta):
    """The MTP module GGUF: the target's architecture keys with block_count = n_layer + 1 and nextn_predict_layers
    = 1, general.type = mtp_module, and only the NextN block's tensors."""
    cfg = target.cfg
    il = cfg.n_layer
    w = GgufWriter()
    w.add_string("general.architecture", "llama")
    w.add_string("general.type", "mtp_module")
    w.add_string("general.name", "speculum-target-mtp")
    w.add_string("general.description", "Multi-token-prediction (NextN) layer for speculum-target, trained by "
                 "tools/train/train_mtp.py: %d steps, %d windows" % (meta["steps"], meta["windows"]))
    w.add_uint32("general.alignment", 32)
    w.add_uint32("general.file_type", 1)
    w.add_uint32("llama.context_length", cfg.n_ctx)
    w.add_uint32("llama.embedding_length", cfg.n_embd)
    w.add_uint32("llama.block_count", cfg.n_layer + 1)
    w.add_uint32("llama.nextn_predict_layers", 1)
    w.add_uint32("llama.feed_forward_length", cfg.n_ff)
    w.add_uint32("llama.attention.head_count", cfg.n_head)
    w.add_uint32("llama.attention.head_count_kv", cfg.n_head_kv)
    w.add_uint32("llama.rope.dimension_count", cfg.head_dim)
    w.add_float32("llama.rope.freq_base", cfg.rope_base)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", cfg.norm_eps)
    w.add_uint32("llama.vocab_size", cfg.n_vocab)
    p = "blk.%d." % il
    tensors = [(p + "attn_norm.weight", head.attn_norm.weight), (p + "attn_q.weight", head.wq.weight),
               (p + "attn_k.weight", head.wk.weight), (p + "attn_v.weight", head.wv.weight),
               (p + "attn_output.weight", head.wo.weight), (p + "ffn_norm.weight", head.ffn_norm.weight),
               (p + "ffn_gate.weight", head.w_gate.weight), (p + "ffn_up.weight", head.w_up.weight),
               (p + "ffn_down.weight", head.w_down.weight), (p + "nextn.eh_proj.weight", head.eh_proj.weight),
               (p + "nextn.enorm.weight", head.enorm.weight), (p + "nextn.hnorm.weight", head.hnorm.weight),
               (p + "nextn.shared_head_norm.weight", head.norm.weight),
               (p + "nextn.shared_head_head.weight", head.output.weight)]
    for name, t in tensors:
        a = t.detach().float().numpy()
        w.add_tensor(name, a, GGML_F32 if a.ndim == 1 else GGML_F16)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    w.write(path)
    print("wrote %s (%d bytes)" % (path, os.path.getsize(path)), flush=True)


def card_section(metrics):
    """The card's "MTP module" section, from runs/mtp.metrics.json."""
    m = metrics
    return ["## MTP module", "",
            "`speculum-target-mtp-f16.gguf` is a multi-token-prediction (NextN) layer for the target (draft kind "
            "`mtp` with this file as `model_path`; docs/engine.md, \"MTP heads\"), stored apart from the target as an "
            "MTP module (docs/models.md): the tensors `blk.11.*` and `blk.11.nextn.*` in llama.cpp's NextN layout. It "
            "fuses the token's embedding with the target's final state (`eh_proj`, 2 x 512 -> 512), runs one block of "
            "the target's shape (FFN %d) and its own head norm and head; the token embedding is the target's (not "
            "stored). %d parameters." % (m["n_ff"], m["params"]),
            "",
            "**Training** (`tools/train/train_mtp.py`, CPU, seed %d): the target's final states and greedy next "
            "tokens over %d random %d-token windows of the training split, computed once (%.0f s); then %d optimizer "
            "steps of 8 windows (%d tokens seen, %.0f s) predicting the target's greedy token with training-time test "
            "over %d unrolled steps, cross-entropy weighted 0.8^k, AdamW with a cosine decay; the block starts from "
            "the target's last block, the head from the target's." % (
                m["seed"], m["windows"], m["seq"], m["feature_seconds"], m["steps"], m["tokens_seen"],
                m["train_seconds"], m["ttt_steps"]),
            "",
            "```",
            "cd tools/train && /usr/bin/python3 corpus.py",
            "/usr/bin/python3 " + m["command"].replace(os.path.join(HERE, ""), ""),
            "/usr/bin/python3 train_mtp.py --out runs/mtp.pt --export-only "
            "--export ../../resources/models/speculum-target-mtp-f16.gguf "
            "--reference ../../resources/models/mtp_reference.json --card ../../resources/models/README.md",
            "```",
            "",
            "**Acceptance on 64 held-out windows** (teacher-forced: how often the layer's greedy token is the "
            "target's greedy token, at chain position k given the earlier positions right): " +
            ", ".join("position %d: %.3f" % (k + 1, a) for k, a in enumerate(m["val_greedy_match"])) +
            " (held-out cross-entropy against the target's token " +
            ", ".join("%.3f" % x for x in m["val_loss"]) + " nats). Measured speculative decoding with it, per "
            "task: docs/performance.md (\"The engines' drafters on the bundled target\").", ""]


def write_card(card_path, gguf_path, metrics):
    """The module's row after the EAGLE-3 head's in the card's file table and its section before "## Licence"."""
    update_card(card_path, sha_row(gguf_path, metrics["params"], "MTP module (NextN layer) for the target"),
                card_section(metrics), "## MTP module", "| `speculum-target-eagle3-")


def write_reference(head, target, tok, path):
    """The layer's step-0 greedy tokens on held-out text (tests/core/draft_mtp_test.cpp reproduces them)."""
    layers = [target.cfg.n_layer]
    with open(path, "w") as f:
        json.dump({"note": "head_argmax[q] = the MTP layer's greedy token after tokens[q + 1], from the target's "
                   "final state at position q (train_mtp.py --reference)",
                   "cases": reference_cases(head, target, tok, layers, final_norm=True)}, f, indent=1)
    print("wrote %s" % path, flush=True)


def main():
    ap = argparse.ArgumentParser(description="Trains the bundled target's multi-token-prediction layer (CPU).")
    add_common_args(ap, os.path.join(HERE, "runs", "mtp.pt"), 0)
    ap.add_argument("--export", help="also write the layer as an MTP module GGUF here")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    rng = np.random.default_rng(args.seed)
    torch.set_num_threads(args.threads)
    t_start = time.time()

    target = Target(args.target)
    cfg = target.cfg
    if args.n_ff not in (0, cfg.n_ff):
        raise SystemExit("an MTP layer has the target's block shape: --n-ff must be %d (or 0)" % cfg.n_ff)
    args.n_ff = cfg.n_ff
    tok = Tokenizer([m.split(" ") for m in target.kv["tokenizer.ggml.merges"]])
    if len(tok.tokens) != cfg.n_vocab:
        raise SystemExit("tokenizer has %d tokens, the target %d" % (len(tok.tokens), cfg.n_vocab))
    layers = [cfg.n_layer]  # the stream after the last layer, then the final norm

    def new_head():
        return MtpHead(cfg.n_embd, cfg.n_head, cfg.n_head_kv, cfg.n_ff, cfg.n_vocab, cfg.n_ctx, cfg.norm_eps,
                       cfg.rope_base)

    if args.export_only:
        ck = torch.load(args.out)
        head = new_head()
        head.load_state_dict(ck["state_dict"])
        head.eval()
        if args.export:
            export(head, target, args.export, ck["metrics"])
        if args.reference:
            write_reference(head, target, tok, args.reference)
        if args.card and args.export:
            write_card(args.card, args.export, ck["metrics"])
        return
    train_w = windows_from("train", args.windows, args.seq, tok, rng)
    val_w = windows_from("heldout", args.val_windows, args.seq, tok, rng)
    print("windows: %d train, %d held-out, %d tokens each (%.0fs)" % (len(train_w), len(val_w), args.seq,
                                                                      time.time() - t_start), flush=True)
    train_f, train_y = build_set(target, train_w, layers, final_norm=True)
    val_f, val_y = build_set(target, val_w, layers, final_norm=True)
    t_feat = time.time() - t_start
    print("target states and greedy labels: %.0fs" % t_feat, flush=True)

    head = new_head()
    head.init_from(target)
    emb_table = target.m.tok_embd.weight.detach()
    step, train_seconds, log = fit(head, args, emb_table, (train_w, train_f, train_y), (val_w, val_f, val_y))
    vl, va = evaluate(head, args, emb_table, (val_w, val_f, val_y))
    n_params = sum(p.numel() for p in head.parameters())
    metrics = {"steps": step, "windows": len(train_w), "seq": args.seq, "tokens_seen": step * args.batch * args.seq,
               "ttt_steps": args.steps_ttt, "n_ff": cfg.n_ff, "params": n_params, "feature_seconds": t_feat,
               "train_seconds": train_seconds, "seed": args.seed, "val_loss": vl, "val_greedy_match": va,
               "log": log, "command": " ".join(sys.argv)}
    print("final held-out: loss %s  greedy match per step %s  (%d params, %d steps, %.0fs)" % (
        " ".join("%.3f" % x for x in vl), " ".join("%.3f" % x for x in va), n_params, step, time.time() - t_start))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.save({"state_dict": head.state_dict(), "metrics": metrics}, args.out)
    with open(os.path.splitext(args.out)[0] + ".metrics.json", "w") as f:
        json.dump(metrics, f, indent=1)
    if args.export:
        export(head, target, args.export, metrics)
    if args.reference:
        write_reference(head, target, tok, args.reference)
    if args.card and args.export:
        write_card(args.card, args.export, metrics)


if __name__ == "__main__":
    sys.exit(main())
