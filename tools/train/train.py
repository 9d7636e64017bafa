#!/usr/bin/python3
# Trains one of Speculum's bundled models (tools/train/model.py CONFIGS) on the tokenized corpus from prepare.py.
# Plain next-token LM training: AdamW, warm-up-stable-decay, fp32 weights, fixed seed, CPU threads as given.
# Checkpoints every --ckpt-every steps to <out>.ckpt (model, optimizer, step, RNG states); --resume continues a
# run from it with the same result as an uninterrupted run. --init-gguf starts from an exported model's weights
# (continued training, e.g. to a longer context). --long-seq switches to longer sequences when the decay starts.
# Usage: train.py --config target --steps 1500 --out tools/train/runs/target.pt   (see tools/train/README.md)
import argparse
import dataclasses
import json
import math
import os
import signal
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from model import CONFIGS, Llama

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
SOURCES = ("kjv", "py", "qa", "lib", "sql")
OLD_SOURCES = ("kjv", "py", "qa")  # the first corpus: validation losses are compared with earlier models on these


def load_streams(split, sources=SOURCES):
    return {s: np.load(os.path.join(DATA, "%s_%s.npy" % (split, s))).astype(np.int64) for s in sources}


def load_gguf_weights(model, path):
    """Copies the tensors of an exported GGUF (export_gguf.py names, F16/BF16/F32) into `model`; shapes must match."""
    from export_gguf import gguf_tensors
    from gguf import GgufReader
    r = GgufReader(path)
    with torch.no_grad():
        for name, t in gguf_tensors(model):
            a = r.tensors[name]
            if tuple(a.shape) != tuple(t.shape):
                raise SystemExit("%s: %s has shape %s, the model %s" % (path, name, a.shape, tuple(t.shape)))
            t.copy_(torch.from_numpy(np.array(a, dtype=np.float32)))


def sample_batch(rng, streams, weights, batch, seq, bos_id):
    """Each row is BOS + a random window of one source's stream (source drawn by `weights`); returns x, y (B, seq)."""
    names = list(streams)
    p = np.array([weights[n] for n in names], dtype=np.float64)
    p /= p.sum()
    rows = []
    for _ in range(batch):
        s = streams[names[rng.choice(len(names), p=p)]]
        off = int(rng.integers(0, len(s) - seq))
        rows.append(np.concatenate(([bos_id], s[off:off + seq])))
    a = torch.from_numpy(np.stack(rows))
    return a[:, :-1], a[:, 1:]


def val_windows(streams, seq, bos_id, per_source):
    """Deterministic evaluation windows: `per_source` evenly spaced windows from each held-out stream."""
    out = {}
    for name, s in streams.items():
        n = min(per_source, (len(s) - 1) // seq)
        offs = np.linspace(0, len(s) - seq - 1, n).astype(np.int64)
        out[name] = torch.from_numpy(np.stack([np.concatenate(([bos_id], s[o:o + seq])) for o in offs]))
    return out


@torch.no_grad()
def evaluate(model, windows, chunk=16):
    """Mean next-token cross-entropy (nats/token) per source and over all windows."""
    model.eval()
    res, tot, cnt = {}, 0.0, 0
    for name, a in windows.items():
        s, n = 0.0, 0
        for i in range(0, len(a), chunk):
            x, y = a[i:i + chunk, :-1], a[i:i + chunk, 1:]
            loss = F.cross_entropy(model(x).reshape(-1, model.cfg.n_vocab), y.reshape(-1), reduction="sum")
            s += loss.item()
            n += y.numel()
        res[name] = s / n
        tot += s
        cnt += n
    res["all"] = tot / cnt
    model.train()
    return res


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown CPU"


def seeded_setup(threads, seed):
    """Threads and seeds of a training run; returns its numpy generator, the vocabulary size and BOS id of
    data/tokenizer.json."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    with open(os.path.join(DATA, "tokenizer.json")) as f:
        tok = json.load(f)
    return rng, tok["vocab_size"], tok["vocab_size"] - 2


def lr_at(step, lr, warmup, decay_at, decay_len):
    """Warm-up-stable-decay: linear warm-up, constant peak, then a cosine from the peak down to 10 % over
    `decay_len` steps starting at step `decay_at` (None: not started yet)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    if decay_at is None or step < decay_at:
        return lr
    t = min(1.0, (step - decay_at) / max(1, decay_len))
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--config", choices=sorted(CONFIGS), required=True)
    ap.add_argument("--steps", type=int, required=True, help="total steps (upper bound with --time-budget)")
    ap.add_argument("--decay-at", type=int, default=0,
                    help="step where the LR decay starts (0: at 80 %% of --steps or of --time-budget)")
    ap.add_argument("--decay-frac", type=float, default=0.2, help="decay phase, as a fraction of all steps")
    ap.add_argument("--time-budget", type=float, default=0,
                    help="seconds: start the decay at 80 %% of this budget if earlier than --decay-at; the run "
                         "then has decay_at / (1 - decay-frac) steps. The log records decay_at, so the run can be "
                         "reproduced with --steps N --decay-at K and no budget")
    ap.add_argument("--batch", type=int, default=16, help="sequences per step")
    ap.add_argument("--seq", type=int, default=256, help="tokens per sequence incl. the leading BOS")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--weights", default="kjv=0.35,py=0.5,qa=0.15", help="sampling weight per source")
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--val-windows", type=int, default=48, help="held-out windows per source")
    ap.add_argument("--max-seconds", type=float, default=0, help="stop early (throughput trials only)")
    ap.add_argument("--eval-windows", type=int, default=16, help="held-out windows per source, periodic evals")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast forward (5x faster on AVX-512 BF16 CPUs)")
    ap.add_argument("--long-seq", type=int, default=0,
                    help="from the start of the decay on, sequences of this many tokens (batch scaled to keep the "
                         "tokens per step); 0: --seq throughout")
    ap.add_argument("--init-gguf", default="", help="start from the weights of this exported GGUF")
    ap.add_argument("--ckpt-every", type=int, default=50, help="steps between checkpoints (<out>.ckpt)")
    ap.add_argument("--resume", action="store_true", help="continue from <out>.ckpt if it exists")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    rng, n_vocab, bos_id = seeded_setup(args.threads, args.seed)
    cfg = dataclasses.replace(CONFIGS[args.config], n_vocab=n_vocab)
    if max(args.seq, args.long_seq) > cfg.n_ctx:
        raise SystemExit("--seq/--long-seq exceed n_ctx %d" % cfg.n_ctx)
    if args.long_seq and (args.batch * args.seq) % args.long_seq:
        raise SystemExit("--batch * --seq must be a multiple of --long-seq")
    model = Llama(cfg)
    if args.init_gguf:
        load_gguf_weights(model, args.init_gguf)
    weights = dict((kv.split("=")[0], float(kv.split("=")[1])) for kv in args.weights.split(","))
    train = load_streams("train", tuple(weights))
    held = load_streams("heldout", tuple(weights))
    windows = val_windows(held, 255, bos_id, args.val_windows)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    print("config %s: %d parameters; %s" % (cfg.name, model.n_params(), json.dumps(vars(args))), flush=True)
    hist, ema = [], None
    segments = []  # one entry per start or resume: the step it began at and its thread count
    step = 0
    total = args.steps
    decay_at = args.decay_at if args.decay_at > 0 else None
    if decay_at is None and not args.time_budget:
        decay_at = int(round(total * (1 - args.decay_frac)))
    if decay_at is not None:
        total = int(round(decay_at / (1 - args.decay_frac))) if args.decay_at <= 0 else args.steps
    ckpt_path = args.out + ".ckpt"
    elapsed0 = 0.0
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path, map_location="cpu")
        if decay_at is not None and (ck["decay_at"], ck["total"]) != (decay_at, total):
            raise SystemExit("%s was written by a run with %d steps and the decay at step %s, not %d and %d: "
                             "resume with those, or delete the checkpoint" % (ckpt_path, ck["total"], ck["decay_at"],
                                                                             total, decay_at))
        model.load_state_dict(ck["state_dict"])
        opt.load_state_dict(ck["optimizer"])
        rng.bit_generator.state = ck["numpy_rng"]
        torch.set_rng_state(ck["torch_rng"])
        step, hist, ema, decay_at, total, elapsed0 = (ck["step"], ck["history"], ck["ema"], ck["decay_at"],
                                                      ck["total"], ck["seconds"])
        segments = ck.get("segments", [])
        print("resumed from %s at step %d (%.0f s trained)" % (ckpt_path, step, elapsed0), flush=True)
    t0 = time.time() - elapsed0
    segments.append({"from_step": step, "threads": args.threads})
    stop_requested = False

    def request_stop(signum, frame):  # SIGTERM/SIGINT: finish the step, checkpoint, exit
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    eval_windows = {k: w[:args.eval_windows] for k, w in windows.items()}
    while step < total:
        if decay_at is None and (time.time() - t0 >= 0.8 * args.time_budget
                                 or step >= round(args.steps * (1 - args.decay_frac))):
            decay_at = step
            total = min(args.steps, int(round(decay_at / (1 - args.decay_frac))))
            print("decay starts at step %d; total steps %d" % (decay_at, total), flush=True)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.lr, args.warmup, decay_at, total - (decay_at or total))
        seq, batch = args.seq, args.batch
        if args.long_seq and decay_at is not None and step >= decay_at:
            seq, batch = args.long_seq, args.batch * args.seq // args.long_seq
        x, y = sample_batch(rng, train, weights, batch, seq - 1, bos_id)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, cfg.n_vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        el = time.time() - t0
        if step % 10 == 0 or step == total - 1:
            print("step %d seq %d loss %.4f ema %.4f lr %.2e %.0fs %.0f tok/s" % (
                step, seq, loss.item(), ema, opt.param_groups[0]["lr"], el,
                (step + 1) * args.batch * (args.seq - 1) / el), flush=True)
        if (step + 1) % args.eval_every == 0:
            v = evaluate(model, eval_windows)
            hist.append({"step": step + 1, "train_ema": ema, "val": v, "seconds": el})
            print("eval step %d val %s" % (step + 1, json.dumps({k: round(x, 4) for k, x in v.items()})), flush=True)
        step += 1
        if (step % args.ckpt_every == 0 or stop_requested) and step < total:
            tmp = ckpt_path + ".tmp"
            torch.save({"state_dict": model.state_dict(), "optimizer": opt.state_dict(),
                        "numpy_rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(), "step": step,
                        "history": hist, "ema": ema, "decay_at": decay_at, "total": total, "segments": segments,
                        "seconds": time.time() - t0}, tmp)
            os.replace(tmp, ckpt_path)
        if stop_requested:
            print("stopped at step %d on request; checkpoint %s (continue with --resume)" % (step, ckpt_path),
                  flush=True)
            return 3
        if args.max_seconds and el > args.max_seconds:
            break
    steps_done = step
    wall = time.time() - t0
    v = evaluate(model, windows)
    # Final training loss: the same estimator on fixed windows of the training streams (not the noisy batch loss).
    tr = evaluate(model, val_windows(train, 255, bos_id, args.val_windows))
    n_tok = sum(((args.seq if not args.long_seq or decay_at is None or k < decay_at else args.long_seq) - 1)
                * (args.batch * args.seq // (args.seq if not args.long_seq or decay_at is None or k < decay_at
                                             else args.long_seq)) for k in range(steps_done))
    metrics = {"config": dataclasses.asdict(cfg), "n_params": model.n_params(), "args": vars(args),
               "steps": steps_done, "decay_at": decay_at, "planned_steps": total, "tokens_seen": n_tok,
               "train_loss": tr, "val_loss": v, "train_ema_last": ema, "wall_seconds": wall, "history": hist,
               "segments": segments, "cpu": cpu_name(),
               "torch": torch.__version__}
    print("final %s" % json.dumps({"val": v, "train": tr, "wall": round(wall, 1)}), flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.save({"config": dataclasses.asdict(cfg), "state_dict": model.state_dict(), "metrics": metrics}, args.out)
    with open(os.path.splitext(args.out)[0] + ".metrics.json", "w") as f:
        json.dump(metrics, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
