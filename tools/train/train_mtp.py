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
import sys
import time

import torch
import torch.nn as nn

from export_gguf import add_llama_keys, block_tensors
from gguf import GgufWriter
from heads import (HERE, TttHead, add_common_args, reference_cases, sha_row, start, train_and_save,
                   training_data, update_card, write_gguf)
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
    add_llama_keys(w, cfg, cfg.n_layer + 1)
    w.add_uint32("llama.nextn_predict_layers", 1)
    p = "blk.%d." % il
    tensors = block_tensors(p, head) + [
        (p + "nextn.eh_proj.weight", head.eh_proj.weight), (p + "nextn.enorm.weight", head.enorm.weight),
        (p + "nextn.hnorm.weight", head.hnorm.weight), (p + "nextn.shared_head_norm.weight", head.norm.weight),
        (p + "nextn.shared_head_head.weight", head.output.weight)]
    write_gguf(w, tensors, path)


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
            "task: docs/performance-notebook.md (\"The engines' drafters on the bundled target\").", ""]


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
    t_start = time.time()
    target, tok, rng = start(args)
    cfg = target.cfg
    if args.n_ff not in (0, cfg.n_ff):
        raise SystemExit("an MTP layer has the target's block shape: --n-ff must be %d (or 0)" % cfg.n_ff)
    head = MtpHead(cfg.n_embd, cfg.n_head, cfg.n_head_kv, cfg.n_ff, cfg.n_vocab, cfg.n_ctx, cfg.norm_eps,
                   cfg.rope_base)
    if args.export_only:
        ck = torch.load(args.out)
        head.load_state_dict(ck["state_dict"])
        head.eval()
        metrics = ck["metrics"]
    else:
        # the stream after the last layer, then the final norm
        train, val, t_feat = training_data(args, target, tok, rng, [cfg.n_layer], t_start, final_norm=True)
        head.init_from(target)
        metrics = train_and_save(head, args, target, train, val, t_feat, t_start, {"n_ff": cfg.n_ff})
    if args.export:
        export(head, target, args.export, metrics)
    if args.reference:
        write_reference(head, target, tok, args.reference)
    if args.card and args.export:
        write_card(args.card, args.export, metrics)


if __name__ == "__main__":
    sys.exit(main())
