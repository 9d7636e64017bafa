#!/usr/bin/python3
# Distils a bundled draft (config draft or mid) from the bundled target: the student continues from its exported
# GGUF and learns the target's next-token distribution on the training corpus (forward KL at temperature 1, plus a
# small weight of the corpus's own next token). Greedy speculative decoding accepts a drafted token when it equals
# the target's argmax, so the run also reports, on held-out windows, how often the student's argmax equals the
# target's ("agreement"), next to its cross-entropy on the corpus and its KL from the target.
#
# Runs on a CUDA device when there is one (bf16 autocast, fused causal attention), else on the CPU (slow: the
# target's forward pass dominates). The schedule is warm-up, constant, then a cosine decay to 10 % over the last
# --decay-frac of the steps; --time-budget S starts the decay at 80 % of S seconds and records the step, so a
# budgeted run is replayed by step with --steps N --decay-at K (train.py's convention).
# Output: train.py's checkpoint format (export_gguf.py and evaluate.py read it) and <out>.metrics.json.
# Usage: distill.py --config draft --init-gguf ../../resources/models/speculum-draft-f16.gguf \
#            --teacher-gguf ../../resources/models/speculum-target-bf16.gguf --time-budget 240 --out runs/draft_kd.pt
import argparse
import dataclasses
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

from model import CONFIGS, Llama
from train import SOURCES, cpu_name, load_gguf_weights, load_streams, lr_at, sample_batch, seeded_setup, val_windows


def token_terms(s_logits, t_logits, y):
    """Per token, in fp32: KL(target || student) and the student's cross-entropy on the corpus's next token; also the
    flattened logits (student, target)."""
    s = s_logits.float().reshape(-1, s_logits.shape[-1])
    t = t_logits.float().reshape(-1, t_logits.shape[-1])
    ls, lt = F.log_softmax(s, -1), F.log_softmax(t, -1)
    kl = (lt.exp() * (lt - ls)).sum(-1)
    ce = F.nll_loss(ls, y.reshape(-1), reduction="none")
    return kl, ce, s, t


def kd_loss(s_logits, t_logits, y, ce_weight):
    """Forward KL(target || student), plus ce_weight x the corpus cross-entropy, each a mean over the tokens."""
    kl, ce, _, _ = token_terms(s_logits, t_logits, y)
    kl, ce = kl.mean(), ce.mean()
    return kl + ce_weight * ce, kl, ce


@torch.no_grad()
def evaluate(student, teacher, windows, device, amp, chunk=16):
    """Per source and over all windows: the student's cross-entropy on the corpus, its KL from the target and how
    often its argmax equals the target's (what greedy verification accepts)."""
    student.eval()
    out, tot = {}, {"ce": 0.0, "kl": 0.0, "agree": 0, "n": 0}
    for name, a in windows.items():
        acc = {"ce": 0.0, "kl": 0.0, "agree": 0, "n": 0}
        for i in range(0, len(a), chunk):
            x, y = a[i:i + chunk, :-1].to(device), a[i:i + chunk, 1:].to(device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                s, t = student(x), teacher(x)
            kl, ce, s, t = token_terms(s, t, y)
            acc["ce"] += ce.sum().item()
            acc["kl"] += kl.sum().item()
            acc["agree"] += (s.argmax(-1) == t.argmax(-1)).sum().item()
            acc["n"] += y.numel()
        out[name] = {"ce": acc["ce"] / acc["n"], "kl": acc["kl"] / acc["n"], "agreement": acc["agree"] / acc["n"]}
        for k in tot:
            tot[k] += acc[k]
    out["all"] = {"ce": tot["ce"] / tot["n"], "kl": tot["kl"] / tot["n"], "agreement": tot["agree"] / tot["n"]}
    student.train()
    return out


def fmt(ev):
    return " ".join("%s ce %.3f kl %.3f agree %.3f" % (k, v["ce"], v["kl"], v["agreement"]) for k, v in ev.items())


def main():
    ap = argparse.ArgumentParser(description="Distils a bundled draft from the bundled target (see the header).")
    ap.add_argument("--config", choices=("draft", "mid"), required=True, help="the student's shape (model.py)")
    ap.add_argument("--init-gguf", default="", help="the student's starting weights (an exported GGUF); none: "
                    "random initialisation (model.py's)")
    ap.add_argument("--teacher-gguf", required=True, help="the target, as exported (BF16 matrices)")
    ap.add_argument("--steps", type=int, default=100000, help="total steps (upper bound with --time-budget)")
    ap.add_argument("--decay-at", type=int, default=0, help="step where the decay starts (0: from the budget)")
    ap.add_argument("--decay-frac", type=float, default=0.2)
    ap.add_argument("--time-budget", type=float, default=0, help="seconds; the decay starts at 80 %% of them")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=1024, help="tokens per sequence incl. the leading BOS")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--ce-weight", type=float, default=0.1, help="weight of the corpus cross-entropy")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2, help="CPU threads (CPU runs)")
    ap.add_argument("--weights", default="kjv=0.3,py=0.3,qa=0.12,lib=0.18,sql=0.1", help="sampling weight per source")
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--val-windows", type=int, default=48, help="held-out windows per source for the final eval")
    ap.add_argument("--eval-windows", type=int, default=8, help="held-out windows per source, periodic evals")
    ap.add_argument("--device", default="auto", help="cuda, cpu or auto")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if args.device == "auto" else args.device))
    rng, n_vocab, bos_id = seeded_setup(args.threads, args.seed)
    cfg = dataclasses.replace(CONFIGS[args.config], n_vocab=n_vocab)
    tcfg = dataclasses.replace(CONFIGS["target"], n_vocab=n_vocab)
    if args.seq > min(cfg.n_ctx, tcfg.n_ctx):
        raise SystemExit("--seq exceeds the models' context")
    student, teacher = Llama(cfg), Llama(tcfg)
    if args.init_gguf:
        load_gguf_weights(student, args.init_gguf)
    load_gguf_weights(teacher, args.teacher_gguf)
    student.to(device).train()
    teacher.to(device).eval().requires_grad_(False)
    amp = True  # bf16 autocast: the target runs BF16 in Speculum too
    weights = dict((kv.split("=")[0], float(kv.split("=")[1])) for kv in args.weights.split(","))
    train = load_streams("train", tuple(weights))
    held = load_streams("heldout", tuple(s for s in SOURCES if s in weights))
    windows = val_windows(held, 255, bos_id, args.val_windows)
    eval_windows = {k: w[:args.eval_windows] for k, w in windows.items()}
    decay = [p for n, p in student.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in student.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    print("distil %s (%d parameters) from the target (%d) on %s; %s" % (
        cfg.name, student.n_params(), teacher.n_params(), device, json.dumps(vars(args))), flush=True)
    before = evaluate(student, teacher, windows, device, amp)
    print("before %s" % fmt(before), flush=True)
    hist, ema, step = [], None, 0
    total = args.steps
    decay_at = args.decay_at if args.decay_at > 0 else None
    if decay_at is None and not args.time_budget:
        decay_at = int(round(total * (1 - args.decay_frac)))
    if decay_at is not None and args.decay_at <= 0:
        total = int(round(decay_at / (1 - args.decay_frac)))
    t0 = time.time()
    while step < total:
        if decay_at is None and time.time() - t0 >= 0.8 * args.time_budget:
            decay_at = step
            total = min(args.steps, int(round(decay_at / (1 - args.decay_frac))))
            print("decay starts at step %d; total steps %d" % (decay_at, total), flush=True)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.lr, args.warmup, decay_at, total - (decay_at or total))
        x, y = sample_batch(rng, train, weights, args.batch, args.seq - 1, bos_id)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            with torch.no_grad():
                t_logits = teacher(x)
            s_logits = student(x)
        loss, kl, ce = kd_loss(s_logits, t_logits, y, args.ce_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(student.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == total - 1:
            lv = loss.item()
            ema = lv if ema is None else 0.8 * ema + 0.2 * lv
            el = time.time() - t0
            print("step %d loss %.4f kl %.4f ce %.4f lr %.2e %.0fs %.0f tok/s" % (
                step, lv, kl.item(), ce.item(), opt.param_groups[0]["lr"], el,
                (step + 1) * args.batch * (args.seq - 1) / el), flush=True)
        if (step + 1) % args.eval_every == 0:
            v = evaluate(student, teacher, eval_windows, device, amp)
            hist.append({"step": step + 1, "loss_ema": ema, "val": v, "seconds": time.time() - t0})
            print("eval step %d %s" % (step + 1, fmt({"all": v["all"]})), flush=True)
        step += 1
    wall = time.time() - t0
    after = evaluate(student, teacher, windows, device, amp)
    print("after %s" % fmt(after), flush=True)
    student.to("cpu")
    dev_name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    metrics = {"config": dataclasses.asdict(cfg), "n_params": student.n_params(), "args": vars(args),
               "method": "distillation from the bundled target (forward KL + %.2f x corpus CE)" % args.ce_weight,
               "steps": step, "decay_at": decay_at, "planned_steps": total,
               "tokens_seen": step * args.batch * (args.seq - 1), "before": before, "after": after,
               "val_loss": {k: v["ce"] for k, v in after.items()}, "wall_seconds": wall, "history": hist,
               "device": dev_name, "torch": torch.__version__}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.save({"config": dataclasses.asdict(cfg), "state_dict": student.state_dict(), "metrics": metrics}, args.out)
    with open(os.path.splitext(args.out)[0] + ".metrics.json", "w") as f:
        json.dump(metrics, f, indent=1)
    print("wrote %s: %d steps, %d tokens, %.0f s" % (args.out, step, metrics["tokens_seen"], wall), flush=True)


if __name__ == "__main__":
    sys.exit(main())
