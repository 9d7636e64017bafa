#!/usr/bin/python3
# Trains an EAGLE-3-style draft head for the bundled target and writes it in llama.cpp's EAGLE-3 GGUF layout
# (general.architecture = eagle3; docs/models.md "EAGLE-3 heads"). Development-time only, CPU.
#
# The head: fc maps the target's residual stream entering three of its layers (low, middle, high: eagle3.
# extract_layers) to one state g; one decoder layer reads [attn_norm(embedding(token)); hidden_norm(g)] (2 n_embd
# wide) into q, k and v, adds its attention output to g, runs a SwiGLU FFN, and its output (before output_norm)
# is the next step's g; output_norm and its own LM head give the draft logits. The token embedding is the
# target's (not stored: llama.cpp and Speculum take it from the target).
#
# Training: the target's features and its greedy next tokens are computed once over windows of the training
# corpus; the head learns to predict the target's greedy token (what greedy verification accepts) with
# "training-time test" (EAGLE-3): step k of a row feeds the head's own output state of step k - 1 and attends the
# step-0 keys up to its row plus its own earlier steps' keys at that row, as a chain drafted at inference does.
# Loss: cross-entropy against the target's greedy token, step k weighted 0.8^k.
#
# Usage (tools/train/README.md): train_eagle3.py --time-budget 1500 --out runs/eagle3.pt
#        then --export ../../resources/models/speculum-target-eagle3-f16.gguf (or both in one call)
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn

from gguf import T_INT32, GgufWriter
from heads import (HERE, TttHead, add_common_args, add_tokenizer, reference_cases, sha_row, start,
                   train_and_save, training_data, update_card, write_gguf)
from model import RMSNorm


class Eagle3Head(TttHead):
    def __init__(self, n_embd, n_target, n_head, n_head_kv, n_ff, n_vocab, n_ctx, eps=1e-5, rope_base=10000.0):
        super().__init__(n_embd, n_head, n_head_kv, n_ff, n_vocab, n_ctx, eps, rope_base)
        self.fc = nn.Linear(3 * n_target, n_embd, bias=False)
        self.attn_norm = RMSNorm(n_embd, eps)
        self.hidden_norm = RMSNorm(n_embd, eps)
        self.wq = nn.Linear(2 * n_embd, n_head * self.hd, bias=False)
        self.wk = nn.Linear(2 * n_embd, n_head_kv * self.hd, bias=False)
        self.wv = nn.Linear(2 * n_embd, n_head_kv * self.hd, bias=False)
        self.wo = nn.Linear(n_head * self.hd, n_embd, bias=False)
        self.ffn_norm = RMSNorm(n_embd, eps)
        self.w_gate = nn.Linear(n_embd, n_ff, bias=False)
        self.w_up = nn.Linear(n_embd, n_ff, bias=False)
        self.w_down = nn.Linear(n_ff, n_embd, bias=False)
        self.norm = RMSNorm(n_embd, eps)
        self.output = nn.Linear(n_embd, n_vocab, bias=False)
        for w in (self.fc, self.wq, self.wk, self.wv, self.w_gate, self.w_up):
            nn.init.normal_(w.weight, std=0.02)
        for w in (self.wo, self.w_down):
            nn.init.normal_(w.weight, std=0.01)

    def start(self, feats):  # g = fc [h_low; h_mid; h_high]
        return self.fc(feats)

    def layer_in(self, emb, g):  # q, k and v read [attn_norm(embedding); hidden_norm(g)]; the residual is g
        return torch.cat((self.attn_norm(emb), self.hidden_norm(g)), -1), g

    def after(self, h):  # the layer's output before output_norm is the next step's g
        return h


def export(head, target, path, extract, meta):
    w = GgufWriter()
    kv = target.kv
    w.add_string("general.architecture", "eagle3")
    w.add_string("general.name", "speculum-target-eagle3")
    w.add_string("general.description", "EAGLE-3-style draft head for speculum-target, trained by "
                 "tools/train/train_eagle3.py: %d steps, %d windows" % (meta["steps"], meta["windows"]))
    w.add_uint32("general.alignment", 32)
    w.add_uint32("general.file_type", 1)
    w.add_uint32("eagle3.context_length", head.n_ctx)
    w.add_uint32("eagle3.embedding_length", head.n_embd)
    w.add_uint32("eagle3.block_count", 1)
    w.add_uint32("eagle3.feed_forward_length", head.n_ff)
    w.add_uint32("eagle3.attention.head_count", head.n_head)
    w.add_uint32("eagle3.attention.head_count_kv", head.n_head_kv)
    w.add_uint32("eagle3.rope.dimension_count", head.hd)
    w.add_float32("eagle3.rope.freq_base", head.rope_base)
    w.add_float32("eagle3.attention.layer_norm_rms_epsilon", head.eps)
    w.add_uint32("eagle3.vocab_size", head.n_vocab)
    w.add_array("eagle3.extract_layers", T_INT32, list(extract))
    w.add_uint32("eagle3.target_hidden_size", target.cfg.n_embd)
    add_tokenizer(w, kv)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    tensors = [("fc.weight", head.fc.weight), ("blk.0.attn_norm.weight", head.attn_norm.weight),
               ("blk.0.hidden_norm.weight", head.hidden_norm.weight), ("blk.0.attn_q.weight", head.wq.weight),
               ("blk.0.attn_k.weight", head.wk.weight), ("blk.0.attn_v.weight", head.wv.weight),
               ("blk.0.attn_output.weight", head.wo.weight), ("blk.0.ffn_norm.weight", head.ffn_norm.weight),
               ("blk.0.ffn_gate.weight", head.w_gate.weight), ("blk.0.ffn_up.weight", head.w_up.weight),
               ("blk.0.ffn_down.weight", head.w_down.weight), ("output_norm.weight", head.norm.weight),
               ("output.weight", head.output.weight)]
    write_gguf(w, tensors, path)


def card_section(metrics):
    """The card's "EAGLE-3 head" section, from runs/eagle3.metrics.json."""
    m = metrics
    L = ["## EAGLE-3 head", "",
         "`speculum-target-eagle3-f16.gguf` is an EAGLE-3-style draft head for the target (draft kind `eagle3`; "
         "docs/engine.md, \"EAGLE-3 heads\"), in llama.cpp's `eagle3` GGUF layout (docs/models.md). It reads the "
         "target's residual streams entering layers %s, fuses them with `fc` (3 x 512 -> 512) and runs one decoder "
         "layer (8 heads, 4 KV heads, FFN %d, attention input [embedding; state] 1024 wide) and its own LM head; the "
         "token embedding is the target's (not stored). %d parameters." % (
             ", ".join(str(x) for x in m["extract_layers"]), m["n_ff"], m["params"]),
         "",
         "**Training** (`tools/train/train_eagle3.py`, CPU, seed %d): the target's streams and greedy next tokens "
         "over %d random %d-token windows of the training split (the same corpus as the models above), computed once "
         "(%.0f s); then %d optimizer steps of 8 windows (%d tokens seen, %.0f s) predicting the target's greedy "
         "token with training-time test over %d unrolled steps (each step feeds the head's own output state, as a "
         "drafted chain does), cross-entropy weighted 0.8^k, AdamW with a cosine decay, the LM head initialised "
         "from the target's." % (m["seed"], m["windows"], m["seq"], m["feature_seconds"], m["steps"],
                                 m["tokens_seen"], m["train_seconds"], m["ttt_steps"]),
         "",
         "```",
         "cd tools/train && /usr/bin/python3 corpus.py",
         "/usr/bin/python3 " + m["command"].replace(os.path.join(HERE, ""), ""),
         "/usr/bin/python3 train_eagle3.py --out runs/eagle3.pt --export-only "
         "--export ../../resources/models/speculum-target-eagle3-f16.gguf "
         "--reference ../../resources/models/eagle3_reference.json --card ../../resources/models/README.md",
         "```",
         "",
         "**Acceptance on 64 held-out windows** (teacher-forced: how often the head's greedy token is the target's "
         "greedy token, at chain position k given the earlier positions right): " +
         ", ".join("position %d: %.3f" % (k + 1, a) for k, a in enumerate(m["val_greedy_match"])) +
         " (held-out cross-entropy against the target's token " +
         ", ".join("%.3f" % x for x in m["val_loss"]) + " nats). Measured speculative decoding with it, per task: "
         "docs/performance-notebook.md (\"The engines' drafters on the bundled target\").", ""]
    return L


def write_card(card_path, gguf_path, metrics):
    """The head's row after the small draft's in the card's file table and its section before "## Licence"."""
    update_card(card_path, sha_row(gguf_path, metrics["params"], "EAGLE-3 head for the target"),
                card_section(metrics), "## EAGLE-3 head", "| `speculum-draft-")


def write_reference(head, target, tok, extract, path):
    """The head's step-0 greedy tokens on held-out text (tests/core/draft_eagle3_test.cpp reproduces them)."""
    with open(path, "w") as f:
        json.dump({"note": "head_argmax[q] = the EAGLE-3 head's greedy token after tokens[q + 1], from the target's "
                   "streams at position q (train_eagle3.py --reference)", "extract_layers": extract,
                   "cases": reference_cases(head, target, tok, extract)}, f, indent=1)
    print("wrote %s" % path, flush=True)


def main():
    ap = argparse.ArgumentParser(description="Trains the bundled target's EAGLE-3-style draft head (CPU).")
    add_common_args(ap, os.path.join(HERE, "runs", "eagle3.pt"), 1024)
    ap.add_argument("--export", help="also write the head as an EAGLE-3 GGUF here")
    args = ap.parse_args()
    t_start = time.time()
    target, tok, rng = start(args)
    n_layer = target.cfg.n_layer
    extract = [2, n_layer // 2, n_layer - 3]  # EAGLE-3's low, middle and high layers
    if args.export_only:
        ck = torch.load(args.out)
        head = Eagle3Head(*ck["shape"][:6], ck["shape"][6], target.cfg.norm_eps, target.cfg.rope_base)
        head.load_state_dict(ck["state_dict"])
        head.eval()
        metrics = ck["metrics"]
    else:
        train, val, t_feat = training_data(args, target, tok, rng, extract, t_start)
        cfg = target.cfg
        shape = [cfg.n_embd, cfg.n_embd, cfg.n_head, cfg.n_head_kv, args.n_ff, cfg.n_vocab, cfg.n_ctx]
        head = Eagle3Head(*shape[:6], shape[6], cfg.norm_eps, cfg.rope_base)
        with torch.no_grad():  # start from the target's head, as EAGLE heads usually do
            head.output.weight.copy_(target.m.output.weight)
            head.norm.weight.copy_(target.m.norm.weight)
        metrics = train_and_save(head, args, target, train, val, t_feat, t_start,
                                 {"extract_layers": extract, "n_ff": args.n_ff}, {"shape": shape})
    if args.export:
        export(head, target, args.export, extract, metrics)
    if args.reference:
        write_reference(head, target, tok, extract, args.reference)
    if args.card and args.export:
        write_card(args.card, args.export, metrics)


if __name__ == "__main__":
    sys.exit(main())
