# What the bundled target's draft heads share (train_eagle3.py, train_mtp.py): the target with its features, the
# one-layer head unrolled with "training-time test", the corpus windows, and the training loop with checkpoints.
# Development-time only, CPU.
#
# A head drafts from a state g: step 0's g comes from the target's features at position q (start), each further
# step's from the head's own output at the step before (after), as a chain drafted at inference does. Step k of a
# row attends the step-0 keys up to its row plus its own earlier steps' keys at that row (EAGLE-3's training-time
# test). The loss is cross-entropy against the target's greedy token (what greedy verification accepts), step k
# weighted 0.8^k.
import copy
import json
import math
import os
import random
import re
import signal
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from bpe import Tokenizer
from gguf import GGML_F16, GGML_F32, GgufReader
from model import CONFIGS, apply_rope, rope_tables

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
TARGET = os.path.join(HERE, "..", "..", "resources", "models", "speculum-target-bf16.gguf")
SOURCE_WEIGHTS = {"kjv": 0.3, "py": 0.3, "qa": 0.1, "lib": 0.2, "sql": 0.1}


class Target(nn.Module):
    """The bundled target (model.py's llama decoder) loaded from its GGUF, returning its logits and the residual
    stream entering each layer of `extract` (layer n_layer: after the last one; with final_norm, after the final
    norm too, what the LM head reads)."""

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
    def features(self, idx, extract, final_norm=False):
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
            feats.append(m.norm(x) if final_norm else x)
        return m.output(m.norm(x)), torch.cat(feats, -1)


class TttHead(nn.Module):
    """One decoder layer with an LM head, drafting from a state. Subclasses set wq, wk, wv, wo, ffn_norm, w_gate,
    w_up, w_down, norm, output and define start(feats) -> g (step 0's state), layer_in(emb, g) -> (the attention
    input, the residual) and after(h) -> the next step's g."""

    def __init__(self, n_embd, n_head, n_head_kv, n_ff, n_vocab, n_ctx, eps, rope_base):
        super().__init__()
        self.n_embd, self.n_head, self.n_head_kv, self.hd = n_embd, n_head, n_head_kv, n_embd // n_head
        self.n_ff, self.n_vocab, self.n_ctx, self.eps, self.rope_base = n_ff, n_vocab, n_ctx, eps, rope_base
        cfg = type("C", (), {"rope_base": rope_base, "head_dim": self.hd})
        cos, sin = rope_tables(cfg, n_ctx + 8)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def unroll(self, emb, feats, steps):
        """emb: (B, T, E) target embeddings of the tokens; feats: (B, T, F) target features. Row q (position q + 1)
        of step k reads the token at q + 1 + k and predicts the one after it. Returns [(B, T - 1 - k, V) logits]."""
        B, T, _ = emb.shape
        H, Hk, D = self.n_head, self.n_head_kv, self.hd
        rep = H // Hk
        R = T - 1
        g = self.start(feats[:, :R])
        causal = torch.triu(torch.ones(R, R, dtype=torch.bool), 1)
        scale = 1.0 / math.sqrt(D)
        k0 = v0 = None
        ks, vs, out = [], [], []  # steps 1.. keys and values per row (rows of step j: R - j)
        for k in range(steps):
            n = R - k  # rows whose input token q + 1 + k exists
            x, resid = self.layer_in(emb[:, 1 + k:1 + k + n], g[:, :n])
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
            h = resid + self.wo(y)
            hn = self.ffn_norm(h)
            h = h + self.w_down(F.silu(self.w_gate(hn)) * self.w_up(hn))
            out.append(self.output(self.norm(h)))
            if k > 0:
                ks.append(kr)
                vs.append(vr)
            g = self.after(h)
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
def build_set(target, windows, extract, final_norm=False, chunk=8):
    feats, labels = [], []
    for i in range(0, len(windows), chunk):
        logits, f = target.features(windows[i:i + chunk], extract, final_norm)
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


def fit(head, args, emb_table, train, val, losses_of=step_losses):
    """Trains `head` on train = (windows, features, labels) for args.time_budget seconds (or args.max_steps steps),
    AdamW with warm-up and a cosine decay, checkpoints to <args.out>.ckpt every args.ckpt_every steps and on
    SIGTERM (args.resume continues). `losses_of` (step_losses's signature) gives the per-step losses and greedy
    matches (a block draft has its own). Returns (steps, seconds trained, log of held-out evaluations)."""
    train_w, train_f, train_y = train
    opt = torch.optim.AdamW(head.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    weights = [0.8 ** k for k in range(args.steps_ttt)]
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
        losses, accs = losses_of(head, emb_table, train_w[idx], train_f[idx], train_y[idx], args.steps_ttt)
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
            vl, va = evaluate(head, args, emb_table, val, losses_of)
            log.append({"step": step, "seconds": prior + time.time() - t0, "val_loss": vl, "val_acc": va})
            print("  held-out: loss %s  greedy match per step %s" % (" ".join("%.3f" % x for x in vl),
                                                                      " ".join("%.3f" % x for x in va)), flush=True)
    return step, prior + time.time() - t0, log


def evaluate(head, args, emb_table, val, losses_of=step_losses):
    """Held-out cross-entropy and greedy match per unrolled step, over val = (windows, features, labels)."""
    val_w, val_f, val_y = val
    head.eval()
    with torch.no_grad():
        tot, accs = [0.0] * args.steps_ttt, [0.0] * args.steps_ttt
        n = 0
        for i in range(0, len(val_w), args.batch):
            ls, ac = losses_of(head, emb_table, val_w[i:i + args.batch], val_f[i:i + args.batch],
                                 val_y[i:i + args.batch], args.steps_ttt)
            for k in range(args.steps_ttt):
                tot[k] += ls[k].item()
                accs[k] += ac[k]
            n += 1
    head.train()
    return [t / n for t in tot], [a / n for a in accs]


def start(args):
    """Seeds and threads from args; the target and its tokenizer (checked against its vocabulary); the numpy RNG
    the windows are drawn with."""
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    rng = np.random.default_rng(args.seed)
    torch.set_num_threads(args.threads)
    target = Target(args.target)
    tok = Tokenizer([m.split(" ") for m in target.kv["tokenizer.ggml.merges"]])
    if len(tok.tokens) != target.cfg.n_vocab:
        raise SystemExit("tokenizer has %d tokens, the target %d" % (len(tok.tokens), target.cfg.n_vocab))
    return target, tok, rng


def training_data(args, target, tok, rng, layers, t_start, final_norm=False):
    """The training and held-out windows with the target's features at `layers` and its greedy labels, each
    (windows, features, labels), and the seconds taken since t_start."""
    train_w = windows_from("train", args.windows, args.seq, tok, rng)
    val_w = windows_from("heldout", args.val_windows, args.seq, tok, rng)
    print("windows: %d train, %d held-out, %d tokens each (%.0fs)" % (len(train_w), len(val_w), args.seq,
                                                                      time.time() - t_start), flush=True)
    train_f, train_y = build_set(target, train_w, layers, final_norm)
    val_f, val_y = build_set(target, val_w, layers, final_norm)
    t_feat = time.time() - t_start
    print("target features and greedy labels: %.0fs" % t_feat, flush=True)
    return (train_w, train_f, train_y), (val_w, val_f, val_y), t_feat


def train_and_save(head, args, target, train, val, t_feat, t_start, shape_metrics, saved=None, losses_of=step_losses):
    """Trains `head` (fit), evaluates it, and saves <args.out> ({"state_dict", "metrics"} and `saved`) and
    <args.out stem>.metrics.json. shape_metrics go into the metrics after ttt_steps. Returns the metrics."""
    emb_table = target.m.tok_embd.weight.detach()
    step, train_seconds, log = fit(head, args, emb_table, train, val, losses_of)
    vl, va = evaluate(head, args, emb_table, val, losses_of)
    n_params = sum(p.numel() for p in head.parameters())
    metrics = {"steps": step, "windows": len(train[0]), "seq": args.seq, "tokens_seen": step * args.batch * args.seq,
               "ttt_steps": args.steps_ttt}
    metrics.update(shape_metrics)
    metrics.update({"params": n_params, "feature_seconds": t_feat, "train_seconds": train_seconds, "seed": args.seed,
                    "val_loss": vl, "val_greedy_match": va, "log": log, "command": " ".join(sys.argv)})
    print("final held-out: loss %s  greedy match per step %s  (%d params, %d steps, %.0fs)" % (
        " ".join("%.3f" % x for x in vl), " ".join("%.3f" % x for x in va), n_params, step, time.time() - t_start))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.save(dict({"state_dict": head.state_dict(), "metrics": metrics}, **(saved or {})), args.out)
    with open(os.path.splitext(args.out)[0] + ".metrics.json", "w") as f:
        json.dump(metrics, f, indent=1)
    return metrics


def add_common_args(ap, out, n_ff):
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--out", default=out)
    ap.add_argument("--windows", type=int, default=1200, help="training windows (seq tokens each)")
    ap.add_argument("--val-windows", type=int, default=64)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps-ttt", type=int, default=3, help="unrolled draft steps per row (training-time test)")
    ap.add_argument("--n-ff", type=int, default=n_ff)
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


REFERENCE_TEXTS = [
    "And God said unto Moses, I AM THAT I AM: and he said, Thus shalt thou say unto the children of Israel",
    "def parse_args(argv=None):\n    parser = argparse.ArgumentParser(description=__doc__)\n"]


@torch.no_grad()
def reference_cases(head, target, tok, extract, final_norm=False):
    """The head's step-0 greedy token at every position of two held-out texts, with its matrices rounded to F16 as
    stored: what the C++ drafter must reproduce from the target's states."""
    h16 = copy.deepcopy(head)
    for p in h16.parameters():
        if p.dim() == 2:
            p.copy_(p.half().float())
    h16.eval()
    out = []
    for text in REFERENCE_TEXTS:
        ids = [tok.bos_id] + tok.encode(text)
        x = torch.tensor([ids])
        _, feats = target.features(x, extract, final_norm)
        emb = F.embedding(x, target.m.tok_embd.weight)
        logits = h16.unroll(emb, feats, 1)[0][0]
        out.append({"text": text, "tokens": ids, "head_argmax": logits.argmax(-1).tolist()})
    return out


def update_card(card_path, row, section, title, after_prefix):
    """Puts `row` after the card's file-table row starting with after_prefix and `section` (whose first line is
    `title`) before "## Licence", replacing earlier ones, so the card describes the shipped file."""
    with open(card_path) as f:
        lines = f.read().split("\n")
    lines = [l for l in lines if not l.startswith(row.split(" | ")[0] + " |")]
    if title in lines:
        i = lines.index(title)
        j = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("## "))
        del lines[i:j]
    at = next(k for k, l in enumerate(lines) if l.startswith(after_prefix))
    lines.insert(at + 1, row)
    lic = lines.index("## Licence")
    lines[lic:lic] = section
    # The total under the file table counts every row's bytes.
    total = sum(int(l.split(" | ")[1]) for l in lines if l.startswith("| `") and l.split(" | ")[1].isdigit())
    lines = [re.sub(r"^Total [0-9.]+ MB", "Total %.1f MB" % (total / 1e6), l) for l in lines]
    with open(card_path, "w") as f:
        f.write("\n".join(lines))
    print("updated %s" % card_path, flush=True)


def add_tokenizer(w, kv):
    """The target's tokenizer keys (kv: its GGUF metadata) into GgufWriter w, as the heads' files carry them."""
    from gguf import T_INT32, T_STRING
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.pre"):
        w.add_string(key, kv[key])
    w.add_array("tokenizer.ggml.tokens", T_STRING, kv["tokenizer.ggml.tokens"])
    w.add_array("tokenizer.ggml.token_type", T_INT32, kv["tokenizer.ggml.token_type"])
    w.add_array("tokenizer.ggml.merges", T_STRING, kv["tokenizer.ggml.merges"])
    for key in ("tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"):
        w.add_uint32(key, kv[key])


def write_gguf(w, tensors, path):
    """Adds (name, torch tensor) pairs to GgufWriter w (matrices F16, vectors F32, as the heads ship) and writes it."""
    for name, t in tensors:
        a = t.detach().float().numpy()
        w.add_tensor(name, a, GGML_F32 if a.ndim == 1 else GGML_F16)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    w.write(path)
    print("wrote %s (%d bytes)" % (path, os.path.getsize(path)), flush=True)


def sha_row(gguf_path, params, what):
    """A file's row in the card's table (resources/models/README.md)."""
    import hashlib
    with open(gguf_path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    return "| `%s` | %d | `%s...` | %d | matrices F16, norms F32 | %s |" % (
        os.path.basename(gguf_path), os.path.getsize(gguf_path), sha[:16], params, what)
