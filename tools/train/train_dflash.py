#!/usr/bin/python3
# Trains a block draft for the bundled target, DFlash or (--dspark) DSpark, and writes it in llama.cpp's `dflash`
# GGUF layout (docs/models.md "Block drafts"; core/drafts/dflash.h). Development-time only, CPU.
#
# The draft: fc fuses the target's residual streams entering four of its layers into g = enc_norm(fc [h...]); each
# of its Qwen 3 layers (q/k norms, NeoX RoPE) holds, for every context position p, K = rope(k_norm(wk g_p), p) and
# V = wv g_p: the context enters as the target's states, never as tokens. A block [anchor, mask, ..., mask] at the
# positions after the context attends all of those and itself both ways; output_norm and the target's own LM head
# (frozen, not stored) give every row's logits in one pass. DFlash reads rows 1..B-1 (row r: the token r after the
# anchor), DSpark rows 0..B-1 (row r: the token r + 1 after it) with its two heads: a Markov bias w2 w1[prev] on
# row r's logits from the token before it, and a confidence sigmoid(conf_proj [norm(row r); w1[prev]] + b) that
# predicts whether row r is accepted.
#
# Training: the target's streams and greedy next tokens over windows of the training corpus, computed once
# (heads.py training_data); every optimizer step takes 8 windows and 32 random anchors in each, and teaches each row
# the target's greedy token at its position given the true text before it (row r of anchor p: the target's greedy
# token after position p + r - 1, DFlash; p + r, DSpark). DSpark's Markov head reads the row before's label (what
# it reads at inference when that row was accepted) and its confidence learns whether the row's argmax is right.
# Loss: cross-entropy per row weighted 0.8^r (plus the confidence's binary cross-entropy). AdamW, cosine decay.
#
# Usage (tools/train/README.md): train_dflash.py --time-budget 1200 --out runs/dflash.pt
#        --export ../../resources/models/speculum-target-dflash-f16.gguf --reference ../../resources/models/dflash_reference.json
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from gguf import T_INT32, GgufWriter
from heads import (HERE, add_common_args, add_tokenizer, sha_row, start, train_and_save, training_data, update_card,
                   write_gguf)
from model import RMSNorm


def neox_tables(head_dim, n_pos, base):
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = torch.arange(n_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def neox(x, cos, sin):
    """Rotates pairs (x[i], x[i + D/2]) (ggml's NeoX mode); cos/sin broadcast over x's leading dims."""
    h = x.shape[-1] // 2
    x0, x1 = x[..., :h], x[..., h:]
    return torch.cat((x0 * cos - x1 * sin, x0 * sin + x1 * cos), -1)


class QwenLayer(nn.Module):
    def __init__(self, e, n_head, n_head_kv, hd, n_ff, eps):
        super().__init__()
        self.attn_norm, self.ffn_norm = RMSNorm(e, eps), RMSNorm(e, eps)
        self.q_norm, self.k_norm = RMSNorm(hd, eps), RMSNorm(hd, eps)
        self.wq = nn.Linear(e, n_head * hd, bias=False)
        self.wk = nn.Linear(e, n_head_kv * hd, bias=False)
        self.wv = nn.Linear(e, n_head_kv * hd, bias=False)
        self.wo = nn.Linear(n_head * hd, e, bias=False)
        self.w_gate = nn.Linear(e, n_ff, bias=False)
        self.w_up = nn.Linear(e, n_ff, bias=False)
        self.w_down = nn.Linear(n_ff, e, bias=False)


class BlockDraft(nn.Module):
    def __init__(self, n_embd, n_target, n_feat, n_head, n_head_kv, n_ff, n_layer, n_vocab, n_ctx, block,
                 markov_rank, eps=1e-5, rope_base=10000.0):
        super().__init__()
        self.n_embd, self.n_head, self.n_head_kv, self.hd = n_embd, n_head, n_head_kv, n_embd // n_head
        self.n_ff, self.n_layer, self.n_vocab, self.n_ctx, self.block = n_ff, n_layer, n_vocab, n_ctx, block
        self.eps, self.rope_base, self.rank = eps, rope_base, markov_rank
        self.fc = nn.Linear(n_feat * n_target, n_embd, bias=False)
        self.enc_norm = RMSNorm(n_embd, eps)
        self.layers = nn.ModuleList(QwenLayer(n_embd, n_head, n_head_kv, self.hd, n_ff, eps) for _ in range(n_layer))
        self.norm = RMSNorm(n_embd, eps)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
        for L in self.layers:
            for w in (L.wo, L.w_down):
                nn.init.normal_(w.weight, std=0.01)
        if markov_rank > 0:
            self.markov_w1 = nn.Parameter(torch.randn(n_vocab, markov_rank) * 0.02)
            self.markov_w2 = nn.Parameter(torch.zeros(n_vocab, markov_rank))
            self.conf_proj = nn.Linear(n_embd + markov_rank, 1, bias=True)
            nn.init.normal_(self.conf_proj.weight, std=0.02)
            nn.init.zeros_(self.conf_proj.bias)
        cos, sin = neox_tables(self.hd, n_ctx + block + 8, rope_base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def set_target(self, emb_table, out_w, mask_id):
        self.register_buffer("emb", emb_table.detach(), persistent=False)
        self.register_buffer("out_w", out_w.detach(), persistent=False)
        self.mask_id = mask_id

    def rows(self, feats, ctx_len, anchors, anchor_tok):
        """The block's normed outputs: feats (W, T, F) target streams; anchors (W, N) positions p (the context is
        positions < p, at most ctx_len); anchor_tok (W, N). Returns (W, N, B, E)."""
        W, T, _ = feats.shape
        N, B, H, Hk, D = anchors.shape[1], self.block, self.n_head, self.n_head_kv, self.hd
        g = self.enc_norm(self.fc(feats[:, :ctx_len]))  # (W, Tc, E)
        Tc = g.shape[1]
        x = self.emb[self.mask_id].expand(W, N, B, self.n_embd).clone()
        x[:, :, 0] = self.emb[anchor_tok]
        pos = anchors[:, :, None] + torch.arange(B)[None, None, :]  # (W, N, B)
        cq, sq = self.cos[pos][:, :, None], self.sin[pos][:, :, None]  # (W, N, 1, B, D/2)
        cc, sc = self.cos[:Tc], self.sin[:Tc]
        ctx_mask = torch.arange(Tc)[None, None, :] >= anchors[:, :, None]  # (W, N, Tc): keys at or after p
        scale = 1.0 / math.sqrt(D)
        for L in self.layers:
            kc = neox(L.k_norm(L.wk(g).view(W, Tc, Hk, D)).transpose(1, 2), cc, sc)  # (W, Hk, Tc, D)
            vc = L.wv(g).view(W, Tc, Hk, D).transpose(1, 2)
            kc, vc = kc.repeat_interleave(H // Hk, 1), vc.repeat_interleave(H // Hk, 1)
            h = L.attn_norm(x)
            q = neox(L.q_norm(L.wq(h).view(W, N, B, H, D)).transpose(2, 3), cq, sq)  # (W, N, H, B, D)
            k = neox(L.k_norm(L.wk(h).view(W, N, B, Hk, D)).transpose(2, 3), cq, sq)
            v = L.wv(h).view(W, N, B, Hk, D).transpose(2, 3)
            k, v = k.repeat_interleave(H // Hk, 2), v.repeat_interleave(H // Hk, 2)
            s_ctx = torch.einsum("wnhbd,whtd->wnhbt", q, kc) * scale
            s_ctx = s_ctx.masked_fill(ctx_mask[:, :, None, None, :], float("-inf"))
            s_blk = (q @ k.transpose(-1, -2)) * scale  # (W, N, H, B, B): the block sees itself both ways
            att = torch.cat((s_ctx, s_blk), -1).softmax(-1)
            y = torch.einsum("wnhbt,whtd->wnhbd", att[..., :Tc], vc) + att[..., Tc:] @ v
            x = x + L.wo(y.transpose(2, 3).reshape(W, N, B, H * D))
            hn = L.ffn_norm(x)
            x = x + L.w_down(F.silu(L.w_gate(hn)) * L.w_up(hn))
        return self.norm(x)


def block_losses(draft, emb_table, x, feats, labels, n_rows, anchors_per_window=32, gen=None):
    """Per-row cross-entropy and greedy match for random anchors of each window (heads.fit's losses_of)."""
    W, T = x.shape
    B = draft.block
    first = 0 if draft.dspark else 1
    hi = T - B - 1
    anchors = torch.randint(1, hi, (W, anchors_per_window), generator=gen)
    tok = torch.gather(x, 1, anchors)
    out = draft.rows(feats.float(), T, anchors, tok)  # (W, N, B, E)
    logits = out @ draft.out_w.t()  # the target's head
    losses, accs = [], []
    prev = tok
    for i in range(n_rows):
        r = first + i
        lab = torch.gather(labels, 1, anchors + r - 1 + (1 if draft.dspark else 0))  # greedy after p + r - 1 (+1)
        lo = logits[:, :, r]
        loss_extra = 0.0
        if draft.rank > 0:
            w1p = draft.markov_w1[prev]  # (W, N, R)
            lo = lo + w1p @ draft.markov_w2.t()
            conf = draft.conf_proj(torch.cat((out[:, :, r], w1p), -1)).squeeze(-1)
            right = (lo.argmax(-1) == lab).float()
            loss_extra = F.binary_cross_entropy_with_logits(conf, right)
        losses.append(F.cross_entropy(lo.reshape(-1, lo.shape[-1]), lab.reshape(-1)) + loss_extra)
        accs.append((lo.argmax(-1) == lab).float().mean().item())
        prev = lab  # teacher forcing: the Markov head reads the row before's token when it was accepted
    return losses, accs


def export(d, target, path, layers, mask_id, meta, name):
    w = GgufWriter()
    kv = target.kv
    w.add_string("general.architecture", "dflash")
    w.add_string("general.name", name)
    w.add_string("general.description", "%s block draft for speculum-target, trained by tools/train/train_dflash.py: "
                 "%d steps, %d windows" % ("DSpark" if d.dspark else "DFlash", meta["steps"], meta["windows"]))
    w.add_uint32("general.alignment", 32)
    w.add_uint32("general.file_type", 1)
    w.add_uint32("dflash.context_length", d.n_ctx)
    w.add_uint32("dflash.embedding_length", d.n_embd)
    w.add_uint32("dflash.block_count", d.n_layer)
    w.add_uint32("dflash.feed_forward_length", d.n_ff)
    w.add_uint32("dflash.attention.head_count", d.n_head)
    w.add_uint32("dflash.attention.head_count_kv", d.n_head_kv)
    w.add_uint32("dflash.attention.key_length", d.hd)
    w.add_uint32("dflash.attention.value_length", d.hd)
    w.add_uint32("dflash.rope.dimension_count", d.hd)
    w.add_float32("dflash.rope.freq_base", d.rope_base)
    w.add_float32("dflash.attention.layer_norm_rms_epsilon", d.eps)
    w.add_array("dflash.target_layers", T_INT32, list(layers))
    w.add_uint32("dflash.block_size", d.block)
    add_tokenizer(w, kv)
    w.add_uint32("tokenizer.ggml.mask_token_id", mask_id)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    t = [("fc.weight", d.fc.weight), ("enc.output_norm.weight", d.enc_norm.weight)]
    for i, L in enumerate(d.layers):
        b = "blk.%d." % i
        t += [(b + "attn_norm.weight", L.attn_norm.weight), (b + "attn_q.weight", L.wq.weight),
              (b + "attn_k.weight", L.wk.weight), (b + "attn_v.weight", L.wv.weight),
              (b + "attn_q_norm.weight", L.q_norm.weight), (b + "attn_k_norm.weight", L.k_norm.weight),
              (b + "attn_output.weight", L.wo.weight), (b + "ffn_norm.weight", L.ffn_norm.weight),
              (b + "ffn_gate.weight", L.w_gate.weight), (b + "ffn_up.weight", L.w_up.weight),
              (b + "ffn_down.weight", L.w_down.weight)]
    t.append(("output_norm.weight", d.norm.weight))
    if d.rank > 0:
        t += [("markov_w1.weight", d.markov_w1), ("markov_w2.weight", d.markov_w2),
              ("conf_proj.weight", d.conf_proj.weight), ("conf_proj.bias", d.conf_proj.bias)]
    write_gguf(w, t, path)


@torch.no_grad()
def reference_cases(d, target, tok, layers):
    """Each anchor's greedy block (the rows the kind reads, argmax after DSpark's bias, chained on the argmax as
    llama.cpp does) with the matrices rounded to F16 as stored: what the C++ drafter must reproduce."""
    import copy
    from heads import REFERENCE_TEXTS
    d16 = copy.deepcopy(d)
    for p in d16.parameters():
        if p.dim() == 2:
            p.copy_(p.half().float())
    first = 0 if d.dspark else 1
    n = d.block - first
    out = []
    for text in REFERENCE_TEXTS:
        ids = [tok.bos_id] + tok.encode(text)
        x = torch.tensor([ids])
        _, feats = target.features(x, layers)
        anchors = torch.arange(1, len(ids))[None, :]
        rows = d16.rows(feats, len(ids), anchors, x[:, 1:])
        logits = rows @ d16.out_w.t()  # (1, N, B, V)
        blocks = []
        for a in range(anchors.shape[1]):
            prev, got = ids[a + 1], []
            for i in range(n):
                lo = logits[0, a, first + i]
                if d.rank > 0:
                    lo = lo + d16.markov_w2 @ d16.markov_w1[prev]
                prev = int(lo.argmax())
                got.append(prev)
            blocks.append(got)
        out.append({"text": text, "tokens": ids, "blocks": blocks})
    return out


def card_section(m, file_name, dspark):
    kind = "DSpark" if dspark else "DFlash"
    L = ["## %s block draft" % kind, "",
         "`%s` is a %s block draft for the target (draft kind `%s`; docs/engine.md, \"Block drafts\"), in "
         "llama.cpp's `dflash` GGUF layout (docs/models.md). `fc` fuses the target's residual streams entering layers "
         "%s (4 x 512 -> 512); each context position enters its %d Qwen 3 layers (8 heads, 4 KV heads, FFN %d, q/k "
         "norms, NeoX RoPE) as K/V of that state, and one pass over [last token, mask x %d] drafts the block; the "
         "token embedding and the LM head are the target's (not stored)%s. %d parameters." % (
             file_name, kind, kind.lower(), ", ".join(str(x) for x in m["target_layers"]), m["n_layer"], m["n_ff"],
             m["block"] - 1, "; the Markov head (rank %d) and the confidence head are stored" % m["markov_rank"]
             if dspark else "", m["params"]),
         "",
         "**Training** (`tools/train/train_dflash.py`, CPU, seed %d): the target's streams and greedy next tokens "
         "over %d random %d-token windows of the training split, computed once (%.0f s); then %d optimizer steps of "
         "8 windows x 32 random anchors (%.0f s), each row learning the target's greedy token at its position, "
         "cross-entropy weighted 0.8^r%s, AdamW with a cosine decay." % (
             m["seed"], m["windows"], m["seq"], m["feature_seconds"], m["steps"], m["train_seconds"],
             " plus the confidence's binary cross-entropy" if dspark else ""),
         "",
         "```",
         "cd tools/train && /usr/bin/python3 corpus.py",
         "/usr/bin/python3 " + m["command"].replace(os.path.join(HERE, ""), ""),
         "/usr/bin/python3 train_dflash.py%s --out runs/%s.pt --export-only --export ../../resources/models/%s "
         "--reference ../../resources/models/%s_reference.json --card ../../resources/models/README.md" % (
             " --dspark" if dspark else "", kind.lower(), file_name, kind.lower()),
         "```",
         "",
         "**Greedy match on 64 held-out windows** (teacher-forced, per block row the kind reads: how often its "
         "argmax is the target's greedy token given the true text before it): " +
         ", ".join("row %d: %.3f" % (k + 1, a) for k, a in enumerate(m["val_greedy_match"])) +
         ". Measured speculative decoding with it: docs/performance.md (\"Block drafts\").", ""]
    return L


def main():
    ap = argparse.ArgumentParser(description="Trains the bundled target's DFlash or DSpark block draft (CPU).")
    add_common_args(ap, os.path.join(HERE, "runs", "dflash.pt"), 1024)
    ap.add_argument("--export", help="also write the draft as a dflash GGUF here")
    ap.add_argument("--dspark", action="store_true", help="DSpark: the anchor-first layout and its two heads")
    ap.add_argument("--block", type=int, default=8, help="block size (DFlash drafts block - 1 tokens, DSpark block)")
    ap.add_argument("--layers", type=int, default=2, help="decoder layers of the draft")
    ap.add_argument("--markov-rank", type=int, default=64)
    ap.add_argument("--bf16-features", action="store_true",
                    help="compute the target's streams and labels under bf16 autocast (about 5x faster on a CPU with "
                         "AVX-512 BF16; the labels then follow BF16 activations, as the C++ runtime's do)")
    args = ap.parse_args()
    t_start = time.time()
    target, tok, rng = start(args)
    cfg = target.cfg
    layers = [1, 4, 7, 10] if cfg.n_layer == 11 else [1, cfg.n_layer // 3, 2 * cfg.n_layer // 3, cfg.n_layer - 1]
    mask_id = tok.bos_id  # never an anchor after the prompt's first token; its embedding marks the block's masks
    rank = args.markov_rank if args.dspark else 0
    shape = dict(n_embd=cfg.n_embd, n_target=cfg.n_embd, n_feat=len(layers), n_head=cfg.n_head,
                 n_head_kv=cfg.n_head_kv, n_ff=args.n_ff, n_layer=args.layers, n_vocab=cfg.n_vocab, n_ctx=cfg.n_ctx,
                 block=args.block, markov_rank=rank, eps=cfg.norm_eps, rope_base=cfg.rope_base)
    d = BlockDraft(**shape)
    d.dspark = args.dspark
    d.set_target(target.m.tok_embd.weight, target.m.output.weight, mask_id)
    n_rows = args.block if args.dspark else args.block - 1
    args.steps_ttt = n_rows  # heads.fit weighs the rows' losses 0.8^r and reports one figure per row
    if args.export_only:
        ck = torch.load(args.out)
        d.load_state_dict(ck["state_dict"])
        metrics = ck["metrics"]
    else:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16_features):
            train, val, t_feat = training_data(args, target, tok, rng, layers, t_start)
        train = (train[0], train[1].half(), train[2])  # autocast leaves bf16 streams: stored as f16 either way
        val = (val[0], val[1].half(), val[2])
        gen = torch.Generator().manual_seed(args.seed)

        def losses_of(h, emb, x, f, y, n):
            return block_losses(h, emb, x, f, y, n, gen=gen)
        metrics = train_and_save(d, args, target, train, val, t_feat, t_start,
                                 {"target_layers": layers, "n_ff": args.n_ff, "n_layer": args.layers,
                                  "block": args.block, "markov_rank": rank, "dspark": args.dspark},
                                 {"shape": shape}, losses_of)
    d.eval()
    if args.export:
        name = "speculum-target-dspark" if args.dspark else "speculum-target-dflash"
        export(d, target, args.export, layers, mask_id, metrics, name)
        if args.card:
            update_card(args.card, sha_row(args.export, metrics["params"], "%s block draft for the target" %
                                           ("DSpark" if args.dspark else "DFlash")),
                        card_section(metrics, os.path.basename(args.export), args.dspark),
                        "## %s block draft" % ("DSpark" if args.dspark else "DFlash"), "| `speculum-target-mtp")
    if args.reference:
        with open(args.reference, "w") as f:
            json.dump({"note": "blocks[a] = the draft's greedy block with tokens[a + 1] as its anchor, from the "
                       "target's streams at positions 0..a (train_dflash.py --reference)", "target_layers": layers,
                       "dspark": args.dspark, "cases": reference_cases(d, target, tok, layers)}, f, indent=1)
        print("wrote %s" % args.reference, flush=True)


if __name__ == "__main__":
    sys.exit(main())
