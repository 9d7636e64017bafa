#!/usr/bin/env python3
"""Re-runs, in shape, the central experiment of each of the five source papers on the bundled models and prints
the tables of docs/reproductions.md (measured figures from `speculum-cli run --report`, modeled figures from
`speculum-cli predict` fed with the measured acceptance and costs).

Development tool: needs a built tree (build/app/speculum-cli) and the bundled models; run it from the repository
root on a quiet machine (nothing else running), e.g.

    python3 tools/repro/reproductions.py --prompts 8 > /tmp/repro.md

Every figure is one run; speedups are ratios measured within that run (speculative against plain decoding of the
same target in the same process), so machine-wide slowdowns cancel. Reports are kept in --out.
"""
import argparse
import json
import os
import subprocess
import sys

CLI = "build/app/speculum-cli"
SMALL = "resources/models/speculum-draft-f16.gguf"
MID = "resources/models/speculum-mid-f16.gguf"


def run(name, cfg, args, dataset=None):
    os.makedirs(args.out, exist_ok=True)
    cfg = dict(cfg)
    cfg.setdefault("dataset", dataset or args.dataset)
    cfg.setdefault("max_prompts", args.prompts)
    cfg.setdefault("max_new_tokens", args.tokens)
    path = os.path.join(args.out, name + ".json")
    rep = os.path.join(args.out, name + ".report.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    subprocess.run([CLI, "run", "--config", path, "--report", rep], check=True, stdout=subprocess.DEVNULL)
    with open(rep) as f:
        r = json.load(f)
    t = r["total"]
    t["_cassandra_j"] = r.get("cassandra_j")
    return t


def predict(inp):
    p = subprocess.run([CLI, "predict", "-"], input=json.dumps(inp), capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def acc(t):
    return t["n_accepted"] / t["n_drafted"] if t["n_drafted"] else 0.0


def alphas(t):
    return [a for a, r in zip(t["alpha"], t["pos_reached"]) if r > 0] or [0.0]


def cassandra(args):
    print("## Cassandra: acceptance over pruning x truncation, and J\n")
    print("| prune | t | acceptance (accepted/drafted) | mean accepted length | draft c | speedup | J (measured, per bit) |")
    print("|---|---|---|---|---|---|---|")
    for p, t in [(0, 0), (0, 4), (0, 6), (0.25, 0), (0.25, 4), (0.4, 4), (0.5, 0), (0.5, 4), (0.5, 6), (0.75, 4)]:
        lvl = {"kind": "self"}
        if p:
            lvl["prune"] = {"ratio": p}
        if t:
            lvl["weight_trunc_bits"] = t
        r = run(f"cassandra_p{p}_t{t}", {"levels": [lvl], "gamma": [3]}, args)
        j = r["_cassandra_j"]
        print(f"| {p} | {t} | {acc(r):.3f} | {r['mean_accepted_length']:.3f} | {r['levels'][1]['cost_ratio']:.3f} | "
              f"{r['speedup']:.3f}x | {j:.3e} |" if j else "| — |")
    print()


def csdrafting(args):
    print("## CS Drafting: Max-Gram, vertical and horizontal cascades against EWIF\n")
    print("| configuration | suite | measured speedup | mean accepted length | modeled EWIF (measured alpha, c) |")
    print("|---|---|---|---|---|")
    mg = {"kind": "maxgram"}
    rows = [
        ("Max-Gram (csdrafting), gamma 3", {"levels": [mg], "gamma": [3]}, "chain"),
        ("Max-Gram (periodic), gamma 3", {"levels": [{"kind": "maxgram", "maxgram": {"mode": "periodic"}}], "gamma": [3]}, "chain"),
        ("small draft, gamma 3", {"levels": [{"kind": "model", "model_path": SMALL}], "gamma": [3]}, "chain"),
        ("vertical: small (3) <- Max-Gram (3)", {"levels": [{"kind": "model", "model_path": SMALL}, mg], "gamma": [3, 3]}, "vertical"),
        ("vertical, threshold lengths", {"levels": [{"kind": "model", "model_path": SMALL}, mg], "gamma": [3, 3],
                                          "length_mode": "threshold"}, "threshold"),
        ("horizontal: 2 small then 2 Max-Gram", {"levels": [{"kind": "model", "model_path": SMALL}, mg],
                                                 "k_matrix": [[0, 2, 2], [0, 0, 3], [0, 0, 0]]}, "horizontal"),
    ]
    for suite in [args.dataset, "datasets/copy_from_context.jsonl"]:
        for name, cfg, kind in rows:
            r = run("csd_" + name.split(",")[0].replace(" ", "_").replace(":", "").replace("<-", "from") + "_" +
                    os.path.basename(suite).split(".")[0] + ("_thr" if kind == "threshold" else ""), cfg, args, suite)
            lv = r["levels"]
            if kind == "chain":
                k = cfg["gamma"][0]
                c = lv[1]["cost_ratio"]
                m = predict({"alpha": alphas(r)[:k], "k": k, "c": c})["ewif"]
            else:
                a01 = acc(r)
                a12 = lv[1]["n_review_accepted"] / lv[1]["n_reviewed"] if lv[1]["n_reviewed"] else 0.0
                kk = cfg.get("k_matrix") or [[0, cfg["gamma"][0], 0], [0, 0, cfg["gamma"][1]], [0, 0, 0]]
                km = {"mode": "threshold" if kind == "threshold" else "truncate", "k": kk,
                      "alpha": [[0, a01, a01], [0, 0, a12], [0, 0, 0]],
                      "levels": [{"c": lv[1]["cost_ratio"]}, {"max_gram": True}]}
                m = predict({"kmatrix": km})["kmatrix"]["ewif"]
            print(f"| {name} | {os.path.basename(suite)} | {r['speedup']:.3f}x | {r['mean_accepted_length']:.3f} | "
                  f"{m:.3f} |")
    print()


def mlspecqd(args):
    print("## ML-SpecQD: an MXFP4 draft and a multi-level stack\n")
    print("| configuration | measured speedup | acceptance fraction | S = 1/c | Eq. 1 / multi-level (modeled) |")
    print("|---|---|---|---|---|")
    for g in (3, 4):
        r = run(f"qd_mxfp4_g{g}", {"levels": [{"kind": "self", "weight_format": "mxfp4"}], "gamma": [g]}, args)
        a, c = acc(r), r["levels"][1]["cost_ratio"]
        m = predict({"mlspecqd": [{"alpha": a, "n": g, "s": 1 / c}]})["mlspecqd"]["speedup"]
        print(f"| self MXFP4, gamma {g} | {r['speedup']:.3f}x | {a:.3f} | {1 / c:.2f} | {m:.3f} |")
    r = run("qd_multilevel", {"levels": [{"kind": "self", "weight_format": "mxfp4"}, {"kind": "model", "model_path": SMALL}],
                              "gamma": [3, 3]}, args)
    lv = r["levels"]
    a1, a2 = acc(r), (lv[1]["n_review_accepted"] / lv[1]["n_reviewed"] if lv[1]["n_reviewed"] else 0.0)
    s1, s2 = 1 / lv[1]["cost_ratio"], 1 / lv[2]["cost_ratio"]
    m = predict({"mlspecqd": [{"alpha": a1, "n": 3, "s": s1}, {"alpha": a2, "n": 3, "s": s2}]})["mlspecqd"]["speedup"]
    print(f"| MXFP4 (3) <- small draft (3) | {r['speedup']:.3f}x | {a1:.3f} / {a2:.3f} | {s1:.2f} / {s2:.2f} | {m:.3f} |")
    print()


def cats(args):
    print("## CATS: BPT and speedup against L_SV\n")
    print("| L_DM | L_SV | measured speedup | mean accepted length | BPT, Eq. 4 (MiB, decoder weights) | BPT, all bytes (MiB) |")
    print("|---|---|---|---|---|---|")
    for dl, sv in [(2, 4), (2, 6), (2, 8), (2, 10), (3, 7)]:
        r = run(f"cats_{dl}_{sv}", {"levels": [{"kind": "self"}], "gamma": [3], "verification": "cats",
                                    "cats": {"draft_layers": dl, "sv_layers": sv}}, args)
        print(f"| {dl} | {sv} | {r['speedup']:.3f}x | {r['mean_accepted_length']:.3f} | "
              f"{r['bpt_cats_eq4'] / 2**20:.2f} | {r['bytes_per_token'] / 2**20:.2f} |")
    print()


def ghidorah(args):
    print("## Ghidorah: the verification width, measured on this CPU\n")
    print("| width (nodes + root) | measured speedup | tau (mean accepted length) | target pass / plain step |")
    print("|---|---|---|---|")
    for b in (1, 3, 7, 15, 31):
        r = run(f"ghidorah_w{b + 1}", {"levels": [{"kind": "model", "model_path": SMALL}], "gamma": [3],
                                       "verification": "tree",
                                       "tree": {"kind": "sequoia", "node_budget": b, "max_depth": 6}}, args)
        print(f"| {b + 1} | {r['speedup']:.3f}x | {r['mean_accepted_length']:.3f} | {r['levels'][0]['cost_ratio']:.3f} |")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--dataset", default="datasets/prose_continuation.jsonl")
    ap.add_argument("--out", default="/tmp/speculum-repro")
    ap.add_argument("--only", default="", help="comma-separated: cassandra,csdrafting,mlspecqd,cats,ghidorah")
    args = ap.parse_args()
    if not os.path.exists(CLI):
        sys.exit(f"{CLI} not found: build first (./dev test) and run from the repository root")
    parts = {"cassandra": cassandra, "csdrafting": csdrafting, "mlspecqd": mlspecqd, "cats": cats, "ghidorah": ghidorah}
    for name, fn in parts.items():
        if not args.only or name in args.only.split(","):
            fn(args)


if __name__ == "__main__":
    main()
