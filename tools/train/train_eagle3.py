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
import math
import os
import random
import signal
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from bpe import Tokenizer
from gguf import GGML_F16, GGML_F32, T_INT32, T_STRING, GgufReader, GgufWriter
from model import CONFIGS, RMSNorm, apply_rope, rope_tables

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
TARGET = os.path.join(HERE, "..", "..", "resources", "models", "speculum-target-bf16.gguf")
SOURCE_WEIGHTS = {"kjv": 0.3, "py": 0.3, "qa": 0.1, "lib": 0.2, "sql": 0.1}


class Target(nn.Module):
    """The bundled target (model.py's llama decoder) loaded from its GGUF, returning its logits and the residual
    stream entering each layer of `extract` (the EAGLE-3 features)."""

    def __init__(self, path):
        super().__init__()
        from model import Llama
        r = GgufReader(path)
        n_vocab = len(r.kv["tokenizer.ggml.tokens"])
        import dataclasses
        self.cfg = dataclasses.replace(CONFIGS["target"], n_vocab=n_vocab)
        self.m = Llama(self.cfg)
        from train import load_gguf_weights
        load_gguf_weights(self.m, path)
        self.m.eval()
        self.kv = r.kv

    @torch.no_grad()
    def features(self, idx, extract):
        m, T = self.m, idx.shape[1]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        x = m.tok_embd(idx)
        cos, sin = m.cos[:T], m.sin[:T]
        feats = []
        for il, b in enumerate(m.blocks):
            if il in extract:
                feats.append(x)
            x = b(x, cos, sin, mask)
        if len(m.blocks) in extract:
            feats.append(x)
        return m.output(m.norm(x)), torch.cat(feats, -1)


class Eagle3Head(nn.Module):
    def __init__(self, n_embd, n_target, n_head, n_head_kv, n_ff, n_vocab, n_ctx, eps=1e-5, rope_base=10000.0):
        super().__init__()
        self.n_embd, self.n_head, self.n_head_kv, self.hd = n_embd, n_head, n_head_kv, n_embd // n_head
        self.n_ff, self.n_vocab, self.n_ctx, self.eps, self.rope_base = n_ff, n_vocab, n_ctx, eps, rope_base
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
        cfg = type("C", (), {"rope_base": rope_base, "head_dim": self.hd})
        cos, sin = rope_tables(cfg, n_ctx + 8)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def unroll(self, emb, feats, steps):
        """emb: (B, T, E) target embeddings of the tokens; feats: (B, T, 3 E_t). Row q (position q + 1) of step k
        reads the token at q + 1 + k and predicts the one after it. Returns [(B, T - 1 - k, V) logits] per step."""
        B, T, _ = emb.shape
        H, Hk, D = self.n_head, self.n_head_kv, self.hd
        rep = H // Hk
        R = T - 1
        g = self.fc(feats[:, :R])
        causal = torch.triu(torch.ones(R, R, dtype=torch.bool), 1)
        scale = 1.0 / math.sqrt(D)
        k0 = v0 = None
        ks, vs, out = [], [], []  # steps 1.. keys and values per row (rows of step j: R - j)
        for k in range(steps):
            n = R - k  # rows whose input token q + 1 + k exists
            x = torch.cat((self.attn_norm(emb[:, 1 + k:1 + k + n]), self.hidden_norm(g[:, :n])), -1)
            cos, sin = self.cos[1 + k:1 + k + n], self.sin[1 + k:1 + k + n]
            q = apply_rope(self.wq(x).view(B, n, H, D).transpose(1, 2), cos, sin)
            kr = apply_rope(self.wk(x).view(B, n, Hk, D).transpose(1, 2), cos, sin).repeat_interleave(rep, 1)
            vr = self.wv(x).view(B, n, Hk, D).transpose(1, 2).repeat_interleave(rep, 1)
            if k == 0:
                k0, v0 = kr, vr
            # the step-0 keys of rows <= q (the committed positions), then this row's keys of steps 1..k
            s0 = ((q @ k0[:, :, :n].transpose(-1, -2)) * scale).masked_fill(causal[:n, :n], float("-inf"))
            own_k = [e[:, :, :n] for e in ks] + ([kr] if k > 0 else [])
            own_v = [e[:, :, :n] for e in vs] + ([vr] if k > 0 else [])
            att = torch.cat([s0] + [(q * e).sum(-1, keepdim=True) * scale for e in own_k], -1).softmax(-1)
            y = att[..., :n] @ v0[:, :, :n]
            for j, e in enumerate(own_v):
                y = y + att[..., n + j:n + j + 1] * e
            y = y.transpose(1, 2).reshape(B, n, H * D)
            h = g[:, :n] + self.wo(y)
            hn = self.ffn_norm(h)
            h = h + self.w_down(F.silu(self.w_gate(hn)) * self.w_up(hn))
            out.append(self.output(self.norm(h)))
            if k > 0:
                ks.append(kr)
                vs.append(vr)
            g = h
        return out


def windows_from(split, n_windows, seq, tok, rng):
    """n_windows token windows (BOS + seq - 1 tokens), drawn across sources by SOURCE_WEIGHTS from the corpus
    documents of `split` (data/<split>.jsonl from corpus.py), encoded with the target's tokenizer."""
    docs = {}
    with open(os.path.join(DATA, split + ".jsonl")) as f:
        for line in f:
            d = json.loads(line)
            docs.setdefault(d["src"], []).append(d["text"])
    names = [s for s in SOURCE_WEIGHTS if s in docs]
    p = np.array([SOURCE_WEIGHTS[s] for s in names])
    p /= p.sum()
    out = []
    while len(out) < n_windows:
        src = names[rng.choice(len(names), p=p)]
        text = docs[src][int(rng.integers(len(docs[src])))]
        span = 6 * seq  # characters: more than seq tokens of any source (2.3-3.1 bytes per token)
        off = int(rng.integers(0, max(1, len(text) - span)))
        ids = tok.encode(text[off:off + span])[2 if off else 0:]  # a cut word's pieces are dropped
        if len(ids) < seq - 1:
            continue
        out.append([tok.bos_id] + ids[:seq - 1])
    return torch.tensor(out, dtype=torch.int64)


@torch.no_grad()
def build_set(target, windows, extract, chunk=8):
    feats, labels = [], []
    for i in range(0, len(windows), chunk):
        logits, f = target.features(windows[i:i + chunk], extract)
        feats.append(f.half())
        labels.append(logits.argmax(-1))
    return torch.cat(feats), torch.cat(labels)


def step_losses(head, emb_table, x, feats, labels, steps):
    emb = F.embedding(x, emb_table)
    outs = head.unroll(emb, feats.float(), steps)
    losses, accs = [], []
    for k, lo in enumerate(outs):
        n = lo.shape[1]
        y = labels[:, 1 + k:1 + k + n]  # the target's greedy token after the row's input token
        losses.append(F.cross_entropy(lo.reshape(-1, lo.shape[-1]), y.reshape(-1)))
        accs.append((lo.argmax(-1) == y).float().mean().item())
    return losses, accs


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
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.pre"):
        w.add_string(key, kv[key])
    w.add_array("tokenizer.ggml.tokens", T_STRING, kv["tokenizer.ggml.tokens"])
    w.add_array("tokenizer.ggml.token_type", T_INT32, kv["tokenizer.ggml.token_type"])
    w.add_array("tokenizer.ggml.merges", T_STRING, kv["tokenizer.ggml.merges"])
    for key in ("tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"):
        w.add_uint32(key, kv[key])
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    tensors = [("fc.weight", head.fc.weight), ("blk.0.attn_norm.weight", head.attn_norm.weight),
               ("blk.0.hidden_norm.weight", head.hidden_norm.weight), ("blk.0.attn_q.weight", head.wq.weight),
               ("blk.0.attn_k.weight", head.wk.weight), ("blk.0.attn_v.weight", head.wv.weight),
               ("blk.0.attn_output.weight", head.wo.weight), ("blk.0.ffn_norm.weight", head.ffn_norm.weight),
               ("blk.0.ffn_gate.weight", head.w_gate.weight), ("blk.0.ffn_up.weight", head.w_up.weight),
               ("blk.0.ffn_down.weight", head.w_down.weight), ("output_norm.weight", head.norm.weight),
               ("output.weight", head.output.weight)]
    for name, t in tensors:
        a = t.detach().float().numpy()
        w.add_tensor(name, a, GGML_F32 if a.ndim == 1 else GGML_F16)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    w.write(path)
    print("wrote %s (%d bytes)" % (path, os.path.getsize(path)), flush=True)


def card_row(gguf_path, metrics):
    """The head's row in the card's file table (resources/models/README.md)."""
    import hashlib
    with open(gguf_path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    return "| `%s` | %d | `%s...` | %d | matrices F16, norms F32 | EAGLE-3 head for the target |" % (
        os.path.basename(gguf_path), os.path.getsize(gguf_path), sha[:16], metrics["params"])


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
         "docs/performance.md (\"The engines' drafters on the bundled target\").", ""]
    return L


def update_card(card_path, gguf_path, metrics):
    """Puts the head's row after the small draft's in the card's file table and its section before "## Licence"
    (replacing earlier ones), so the card describes the shipped head (make_card.py writes the same)."""
    with open(card_path) as f:
        lines = f.read().split("\n")
    lines = [l for l in lines if not l.startswith("| `%s`" % os.path.basename(gguf_path))]
    if "## EAGLE-3 head" in lines:
        i = lines.index("## EAGLE-3 head")
        j = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("## "))
        del lines[i:j]
    row = next(k for k, l in enumerate(lines) if l.startswith("| `speculum-draft-"))
    lines.insert(row + 1, card_row(gguf_path, metrics))
    lic = lines.index("## Licence")
    lines[lic:lic] = card_section(metrics)
    with open(card_path, "w") as f:
        f.write("\n".join(lines))
    print("updated %s" % card_path, flush=True)


@torch.no_grad()
def write_reference(head, target, tok, extract, path):
    """The head's step-0 greedy token at every position of two held-out texts, with its matrices rounded to F16 as
    stored: what the C++ drafter must reproduce from the target's streams (tests/core/bundled_family_test.cpp)."""
    h16 = Eagle3Head(head.n_embd, head.n_embd, head.n_head, head.n_head_kv, head.n_ff, head.n_vocab, head.n_ctx,
                     head.eps, head.rope_base)
    h16.load_state_dict(head.state_dict())
    for p in h16.parameters():
        if p.dim() == 2:
            p.copy_(p.half().float())
    h16.eval()
    texts = ["And God said unto Moses, I AM THAT I AM: and he said, Thus shalt thou say unto the children of Israel",
             "def parse_args(argv=None):\n    parser = argparse.ArgumentParser(description=__doc__)\n"]
    out = []
    for text in texts:
        ids = [tok.bos_id] + tok.encode(text)
        x = torch.tensor([ids])
        _, feats = target.features(x, extract)
        emb = F.embedding(x, target.m.tok_embd.weight)
        logits = h16.unroll(emb, feats, 1)[0][0]
        out.append({"text": text, "tokens": ids, "head_argmax": logits.argmax(-1).tolist()})
    with open(path, "w") as f:
        json.dump({"note": "head_argmax[q] = the EAGLE-3 head's greedy token after tokens[q + 1], from the target's "
                   "streams at position q (train_eagle3.py --reference)", "extract_layers": extract, "cases": out},
                  f, indent=1)
    print("wrote %s" % path, flush=True)


def main():
    ap = argparse.ArgumentParser(description="Trains the bundled target's EAGLE-3-style draft head (CPU).")
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--out", default=os.path.join(HERE, "runs", "eagle3.pt"))
    ap.add_argument("--export", help="also write the head as an EAGLE-3 GGUF here")
    ap.add_argument("--windows", type=int, default=1200, help="training windows (seq tokens each)")
    ap.add_argument("--val-windows", type=int, default=64)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps-ttt", type=int, default=3, help="unrolled draft steps per row (training-time test)")
    ap.add_argument("--n-ff", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--time-budget", type=float, default=1500.0, help="seconds of head training (after features)")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many optimizer steps (0 = budget)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ckpt-every", type=int, default=200, help="optimizer steps between checkpoints (<out>.ckpt)")
    ap.add_argument("--resume", action="store_true", help="continue from <out>.ckpt (same arguments)")
    ap.add_argument("--export-only", action="store_true", help="no training: export the trained <out>")
    ap.add_argument("--reference", help="write the head's greedy tokens on held-out text here (JSON, C++ tests)")
    ap.add_argument("--card", help="put the head's row and section into this model card (resources/models/README.md)")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    rng = np.random.default_rng(args.seed)
    torch.set_num_threads(args.threads)
    t_start = time.time()

    target = Target(args.target)
    tok = Tokenizer([m.split(" ") for m in target.kv["tokenizer.ggml.merges"]])
    if len(tok.tokens) != target.cfg.n_vocab:
        raise SystemExit("tokenizer has %d tokens, the target %d" % (len(tok.tokens), target.cfg.n_vocab))
    n_layer = target.cfg.n_layer
    extract = [2, n_layer // 2, n_layer - 3]  # EAGLE-3's low, middle and high layers
    if args.export_only:
        ck = torch.load(args.out)
        head = Eagle3Head(*ck["shape"][:6], ck["shape"][6], target.cfg.norm_eps, target.cfg.rope_base)
        head.load_state_dict(ck["state_dict"])
        head.eval()
        if args.export:
            export(head, target, args.export, extract, ck["metrics"])
        if args.reference:
            write_reference(head, target, tok, extract, args.reference)
        if args.card and args.export:
            update_card(args.card, args.export, ck["metrics"])
        return
    train_w = windows_from("train", args.windows, args.seq, tok, rng)
    val_w = windows_from("heldout", args.val_windows, args.seq, tok, rng)
    print("windows: %d train, %d held-out, %d tokens each (%.0fs)" % (len(train_w), len(val_w), args.seq,
                                                                      time.time() - t_start), flush=True)
    train_f, train_y = build_set(target, train_w, extract)
    val_f, val_y = build_set(target, val_w, extract)
    t_feat = time.time() - t_start
    print("target features and greedy labels: %.0fs" % t_feat, flush=True)

    cfg = target.cfg
    head = Eagle3Head(cfg.n_embd, cfg.n_embd, cfg.n_head, cfg.n_head_kv, args.n_ff, cfg.n_vocab, cfg.n_ctx,
                      cfg.norm_eps, cfg.rope_base)
    with torch.no_grad():  # start from the target's head, as EAGLE heads usually do
        head.output.weight.copy_(target.m.output.weight)
        head.norm.weight.copy_(target.m.norm.weight)
    emb_table = target.m.tok_embd.weight.detach()
    opt = torch.optim.AdamW(head.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    weights = [0.8 ** k for k in range(args.steps_ttt)]

    def evaluate():
        head.eval()
        with torch.no_grad():
            tot, accs = [0.0] * args.steps_ttt, [0.0] * args.steps_ttt
            n = 0
            for i in range(0, len(val_w), args.batch):
                ls, ac = step_losses(head, emb_table, val_w[i:i + args.batch], val_f[i:i + args.batch],
                                     val_y[i:i + args.batch], args.steps_ttt)
                for k in range(args.steps_ttt):
                    tot[k] += ls[k].item()
                    accs[k] += ac[k]
                n += 1
        head.train()
        return [t / n for t in tot], [a / n for a in accs]

    log, step, t0, prior = [], 0, time.time(), 0.0
    budget = args.time_budget
    order = []
    ckpt = args.out + ".ckpt"
    if args.resume and os.path.exists(ckpt):
        ck = torch.load(ckpt)
        head.load_state_dict(ck["head"])
        opt.load_state_dict(ck["opt"])
        step, prior, order, log = ck["step"], ck["elapsed"], ck["order"], ck["log"]
        torch.set_rng_state(ck["rng"])
        print("resumed at step %d (%.0fs trained)" % (step, prior), flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))

    def save_ckpt():
        torch.save({"head": head.state_dict(), "opt": opt.state_dict(), "step": step, "order": order, "log": log,
                    "elapsed": prior + time.time() - t0, "rng": torch.get_rng_state()}, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)

    while True:
        elapsed = prior + time.time() - t0
        if stop:
            save_ckpt()
            raise SystemExit("stopped at step %d; --resume continues" % step)
        if (args.max_steps and step >= args.max_steps) or (not args.max_steps and elapsed >= budget):
            break
        if not order:
            order = list(torch.randperm(len(train_w)).split(args.batch))
        idx = order.pop()
        frac = min(1.0, elapsed / budget) if not args.max_steps else step / args.max_steps
        lr = args.lr * min(1.0, (step + 1) / 20) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for gr in opt.param_groups:
            gr["lr"] = lr
        losses, accs = step_losses(head, emb_table, train_w[idx], train_f[idx], train_y[idx], args.steps_ttt)
        loss = sum(w * l for w, l in zip(weights, losses))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        step += 1
        if step % args.ckpt_every == 0:
            save_ckpt()
        if step % 20 == 0:
            print("step %d  %.0fs  lr %.2e  loss %s  acc %s" % (step, time.time() - t0, lr,
                  " ".join("%.3f" % l.item() for l in losses), " ".join("%.3f" % a for a in accs)), flush=True)
        if step % 100 == 0:
            vl, va = evaluate()
            log.append({"step": step, "seconds": prior + time.time() - t0, "val_loss": vl, "val_acc": va})
            print("  held-out: loss %s  greedy match per step %s" % (" ".join("%.3f" % x for x in vl),
                                                                      " ".join("%.3f" % x for x in va)), flush=True)
    vl, va = evaluate()
    n_params = sum(p.numel() for p in head.parameters())
    metrics = {"steps": step, "windows": len(train_w), "seq": args.seq, "tokens_seen": step * args.batch * args.seq,
               "ttt_steps": args.steps_ttt, "extract_layers": extract, "n_ff": args.n_ff, "params": n_params,
               "feature_seconds": t_feat, "train_seconds": prior + time.time() - t0, "seed": args.seed,
               "val_loss": vl, "val_greedy_match": va, "log": log, "command": " ".join(sys.argv)}
    print("final held-out: loss %s  greedy match per step %s  (%d params, %d steps, %.0fs)" % (
        " ".join("%.3f" % x for x in vl), " ".join("%.3f" % x for x in va), n_params, step, time.time() - t_start))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.save({"state_dict": head.state_dict(), "metrics": metrics,
                "shape": [cfg.n_embd, cfg.n_embd, cfg.n_head, cfg.n_head_kv, args.n_ff, cfg.n_vocab, cfg.n_ctx]},
               args.out)
    with open(os.path.splitext(args.out)[0] + ".metrics.json", "w") as f:
        json.dump(metrics, f, indent=1)
    if args.export:
        export(head, target, args.export, extract, metrics)
    if args.reference:
        write_reference(head, target, tok, extract, args.reference)
    if args.card and args.export:
        update_card(args.card, args.export, metrics)


if __name__ == "__main__":
    sys.exit(main())
