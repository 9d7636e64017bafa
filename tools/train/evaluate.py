#!/usr/bin/python3
# Evaluates the exported model family on the prompt suites (datasets/*.jsonl): the target's greedy continuations,
# and each drafter's greedy acceptance against its verifier (draft -> target, mid -> target, draft -> mid: the
# levels of a cascade), simulated as chain speculative decoding with gamma = 4 (greedy verification, so the output
# equals the verifier's greedy text). Runs the weights rounded as stored (BF16 / F16) in fp32 with a KV cache.
# Also writes resources/models/reference_tokens.json (tokenizer cases + greedy tokens from the numpy GGUF forward).
# Usage: evaluate.py [--models target=runs/target.pt:bf16,mid=runs/mid.pt:f16,draft=runs/draft.pt:f16]
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

from bpe import Tokenizer
from export_gguf import f16_rounded, load_model
from model import apply_rope

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
TASKS = ["code_completion", "prose_continuation", "copy_from_context", "structured_lists", "question_answer",
         "long_code_completion", "long_copy_from_context"]
SAMPLE_TOKENS = 64  # greedy continuation length of the card's samples


class Cached:
    """Incremental decoding with a KV cache over a (F16-rounded) torch Llama; truncate() rolls the cache back."""

    def __init__(self, model):
        self.m = model
        self.k = [None] * model.cfg.n_layer
        self.v = [None] * model.cfg.n_layer
        self.n = 0

    def truncate(self, n):
        self.n = n
        self.k = [k[:, :, :n] for k in self.k]
        self.v = [v[:, :, :n] for v in self.v]

    @torch.no_grad()
    def feed(self, ids):
        """Appends `ids`; returns logits (len(ids), n_vocab)."""
        m, cfg = self.m, self.m.cfg
        T, n0 = len(ids), self.n
        if n0 + T > cfg.n_ctx:
            raise ValueError("context overflow")
        x = m.tok_embd(torch.tensor([ids]))
        cos, sin = m.cos[n0:n0 + T], m.sin[n0:n0 + T]
        mask = torch.triu(torch.ones(T, n0 + T, dtype=torch.bool), n0 + 1)
        for i, b in enumerate(m.blocks):
            h = b.attn_norm(x)
            q = b.wq(h).view(1, T, cfg.n_head, cfg.head_dim).transpose(1, 2)
            k = b.wk(h).view(1, T, cfg.n_head_kv, cfg.head_dim).transpose(1, 2)
            v = b.wv(h).view(1, T, cfg.n_head_kv, cfg.head_dim).transpose(1, 2)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            self.k[i] = k if self.k[i] is None else torch.cat((self.k[i], k), 2)
            self.v[i] = v if self.v[i] is None else torch.cat((self.v[i], v), 2)
            rep = cfg.n_head // cfg.n_head_kv
            kk = self.k[i].repeat_interleave(rep, dim=1)
            vv = self.v[i].repeat_interleave(rep, dim=1)
            att = (q @ kk.transpose(-1, -2)) / math.sqrt(cfg.head_dim)
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = (att @ vv).transpose(1, 2).reshape(1, T, cfg.n_embd)
            x = x + b.wo(y)
            h = b.ffn_norm(x)
            x = x + b.w_down(torch.nn.functional.silu(b.w_gate(h)) * b.w_up(h))
        self.n += T
        return m.output(m.norm(x))[0]


def target_greedy(target, ids, n, eos):
    c = Cached(target)
    logits = c.feed(ids)
    out = []
    for _ in range(n):
        t = int(logits[-1].argmax())
        out.append(t)
        if t == eos:
            break
        logits = c.feed([t])
    return out


def simulate_chain(draft, ids, greedy, gamma, eos):
    """Chain speculative decoding, greedy verification: the draft proposes up to `gamma` tokens greedily, the
    target accepts the longest prefix equal to its own greedy tokens `greedy`, then emits one token itself.
    Returns (proposed, accepted, target_calls)."""
    c = Cached(draft)
    logits = c.feed(ids)
    pos, proposed, accepted, calls = 0, 0, 0, 0
    n = len(greedy)
    while pos < n:
        base = c.n
        g = min(gamma, n - pos - 1)  # the target's own token always ends a round
        props = []
        lg = logits
        for _ in range(g):
            t = int(lg[-1].argmax())
            props.append(t)
            lg = c.feed([t])
        k = 0
        while k < len(props) and props[k] == greedy[pos + k]:
            k += 1
        proposed += len(props)
        accepted += k
        calls += 1
        new = greedy[pos:pos + k + 1]
        pos += k + 1
        c.truncate(base)
        if pos < n:
            logits = c.feed(new)
    return proposed, accepted, calls


@torch.no_grad()
def agreement(draft, ids, greedy):
    """Per-token greedy agreement: the draft's argmax equals the target's greedy token, teacher-forced."""
    full = ids + greedy
    logits = Cached(draft).feed(full[:-1])
    pred = logits[len(ids) - 1:].argmax(-1).tolist()
    return sum(int(p == g) for p, g in zip(pred, greedy)), len(greedy)


def reference_tokens(tok, ggufs, out_path):
    import ref_forward
    prompts = ["In the beginning God created the heaven and the earth.",
               "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n",
               "Q: What does Genesis 1:3 say?\nA:"]
    tok_cases = ["Hello world", "  two  spaces\n\n\tand tabs", "x = foo(1, 22, 333)  # it's", "don't  'll 's",
                 "    return self._value\n", "A:\n", "abc   ", "2024-01-01T00:00:00Z", "\n\n\n", "", "a\r\nb"]
    res = {"note": "Token ids from tools/train/bpe.py (llama.cpp gpt2 BPE semantics) and greedy tokens from "
                   "tools/train/ref_forward.py over the committed GGUF files (fp32 math on the stored BF16/F16 "
                   "weights). "
                   "margins[i] is the top-1 minus top-2 logit gap at generated token i (min_margin the smallest): a "
                   "runtime whose logits differ by more than about half of it may legitimately pick another token "
                   "there and diverge afterwards.",
           "bos_id": tok.bos_id, "eos_id": tok.eos_id, "add_bos": True,
           "tokenizer": [{"text": t, "ids": tok.encode(t)} for t in tok_cases], "models": {}}
    for name, path in ggufs.items():
        ref = ref_forward.RefModel(path)
        cases = []
        for p in prompts:
            ids = tok.encode(p, bos=True)
            seq, gen, margins = list(ids), [], []
            first_logits = None
            for _ in range(16):
                lg = ref.logits(seq)[-1]
                if first_logits is None:
                    first_logits = lg
                top = np.argsort(-lg)[:2]
                margins.append(float(lg[top[0]] - lg[top[1]]))
                gen.append(int(top[0]))
                seq.append(int(top[0]))
            top5 = np.argsort(-first_logits)[:5]
            cases.append({"prompt": p, "prompt_ids": ids, "greedy_16": gen, "greedy_text": tok.decode(gen),
                          "min_margin": min(margins), "margins": [round(x, 5) for x in margins],
                          "last_logits_top5": [[int(i), float(first_logits[i])] for i in top5]})
        res["models"][name] = {"file": os.path.basename(path), "cases": cases}
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
    print("wrote", out_path)


def parse_models(spec):
    """"name=ckpt:type,..." -> {name: (ckpt path, storage type)}."""
    out = {}
    for item in spec.split(","):
        name, rest = item.split("=", 1)
        path, wtype = rest.rsplit(":", 1)
        out[name] = (path if os.path.isabs(path) else os.path.join(HERE, path), wtype)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default="target=runs/target.pt:bf16,mid=runs/mid.pt:f16,draft=runs/draft.pt:f16",
                    help="name=checkpoint:storage type (bf16|f16), the weights rounded as exported")
    ap.add_argument("--pairs", default="draft:target,mid:target,draft:mid",
                    help="drafter:verifier pairs whose chain acceptance is measured")
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--limit", type=int, default=0, help="prompts per task (0: all)")
    ap.add_argument("--tasks", default=",".join(TASKS), help="comma-separated tasks (parallel runs: one each)")
    ap.add_argument("--no-ref", action="store_true", help="skip writing reference_tokens.json")
    ap.add_argument("--ref-only", action="store_true", help="only write reference_tokens.json")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ggufs", default="target=speculum-target-bf16.gguf,mid=speculum-mid-f16.gguf,"
                                       "draft=speculum-draft-f16.gguf",
                    help="name=file in resources/models, for reference_tokens.json")
    ap.add_argument("--out", default=os.path.join(HERE, "runs", "eval.json"))
    ap.add_argument("--ref-out", default=os.path.join(ROOT, "resources", "models", "reference_tokens.json"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tok = Tokenizer.load(os.path.join(HERE, "data", "tokenizer.json"))
    specs = parse_models(args.models)
    models = {name: f16_rounded(load_model(path)[0], wtype) for name, (path, wtype) in specs.items()}
    pairs = [tuple(p.split(":")) for p in args.pairs.split(",")]
    verifiers = sorted({v for _, v in pairs} | {"target"}, key=list(specs).index)
    t0 = time.time()
    report = {"gamma": args.gamma, "models": {n: {"checkpoint": os.path.relpath(p, HERE), "type": t}
                                              for n, (p, t) in specs.items()}, "tasks": {}}
    for task in ([] if args.ref_only else args.tasks.split(",")):
        with open(os.path.join(ROOT, "datasets", task + ".jsonl")) as f:
            rows = [json.loads(line) for line in f]
        if args.limit:
            rows = rows[:args.limit]
        stats = {"%s->%s" % p: [0, 0, 0, 0, 0, 0] for p in pairs}  # proposed, accepted, calls, gen, agree, n
        samples = []
        for r in rows:
            ids = tok.encode(r["prompt"], bos=True)
            greedy = {v: target_greedy(models[v], ids, r["max_new_tokens"], tok.eos_id) for v in verifiers}
            for d, v in pairs:
                g = greedy[v]
                p, a, c = simulate_chain(models[d], ids, g, args.gamma, tok.eos_id)
                ag, an = agreement(models[d], ids, g)
                st = stats["%s->%s" % (d, v)]
                for i, x in enumerate((p, a, c, len(g), ag, an)):
                    st[i] += x
            if len(samples) < 3:
                smp = {"id": r["id"], "prompt_tail": r["prompt"][-160:], "reference": r["reference"][:200]}
                for name in specs:  # 64 tokens, whatever the task's max_new_tokens
                    smp[name] = tok.decode(target_greedy(models[name], ids, SAMPLE_TOKENS, tok.eos_id))
                samples.append(smp)
        report["tasks"][task] = {"prompts": len(rows), "samples": samples, "pairs": {}}
        for key, (P, A, C, G, AG, AN) in stats.items():
            report["tasks"][task]["pairs"][key] = {
                "generated": G, "proposed": P, "accepted": A, "acceptance_rate": A / max(1, P),
                "tokens_per_target_call": G / max(1, C), "greedy_agreement": AG / max(1, AN)}
            print("%-20s %-14s alpha(gamma=%d) %.3f  tokens/verify call %.2f  per-token agreement %.3f  (%.0fs)" % (
                task, key, args.gamma, A / max(1, P), G / max(1, C), AG / max(1, AN), time.time() - t0), flush=True)
    if not args.ref_only:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
        print("wrote", args.out)
    ggufs = dict(kv.split("=", 1) for kv in args.ggufs.split(","))
    paths = {n: os.path.join(ROOT, "resources", "models", f) for n, f in ggufs.items()}
    if not args.no_ref and all(os.path.exists(p) for p in paths.values()):
        reference_tokens(tok, paths, args.ref_out)


if __name__ == "__main__":
    sys.exit(main())
