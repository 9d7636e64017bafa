#!/usr/bin/env python3
"""Re-runs, in shape, the central experiment of each of the five source papers on the bundled models and prints
the tables of docs/reproductions.md (measured figures from `speculum-cli run --report`, modeled figures from
`speculum-cli predict` fed with the measured acceptance and costs).

Development tool: needs a built tree (build/app/speculum-cli) and the bundled models; run it from the repository
root on a quiet machine (nothing else running), e.g.

    python3 tools/repro/reproductions.py --prompts 8 > /tmp/repro.md

Speedups are ratios measured within a run (each prompt's speculative decode, then its plain decode of the same
target in the same process), so machine-wide slowdowns cancel; each configuration runs --repeats passes over its
prompts and the tables show the median of the per-prompt speedups with its 95 % distribution-free interval. Every
run's lossless check (greedy output identical to the target's own) is read from its report and printed in the last
column; the script exits 1 when any run differs. Reports are kept in --out.
"""
import argparse
import json
import os
import subprocess
import sys

CLI = "build/app/speculum-cli"
SMALL = "resources/models/speculum-draft-f16.gguf"
MID = "resources/models/speculum-mid-f16.gguf"


FAILED = []  # runs whose lossless check did not pass
RUNS = [0]


def run(name, cfg, args, dataset=None, repeats=None):
    os.makedirs(args.out, exist_ok=True)
    cfg = dict(cfg)
    cfg.setdefault("dataset", dataset or args.dataset)
    cfg.setdefault("max_prompts", args.prompts)
    cfg.setdefault("max_new_tokens", args.tokens)
    path = os.path.join(args.out, name + ".json")
    rep = os.path.join(args.out, name + ".report.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    out = subprocess.run([CLI, "run", "--config", path, "--report", rep, "--repeats", str(repeats or args.repeats)],
                         check=True, capture_output=True, text=True).stdout
    with open(rep) as f:
        r = json.load(f)
    t = r["total"]
    t["_cassandra_j"] = r.get("cassandra_j")
    t["_speedup"] = r["repeated"]["speedup"]
    # The lossless line of stdout and the report's own fields must agree that every prompt's output was identical.
    ok = (t.get("lossless_checked") and t.get("lossless_mismatch", 0) == -1 and "lossless check: identical" in out
          and all(x["stats"].get("lossless_mismatch", 0) == -1 for x in r["runs"]))
    RUNS[0] += 1
    if not ok:
        FAILED.append(name)
    t["_lossless"] = "ok" if ok else f"DIFFERS at token {t.get('lossless_mismatch')}"
    return t


def sp(t):
    """The median per-prompt speedup and its 95 % interval."""
    m = t["_speedup"]
    return f"{m['median']:.2f}x [{m['lo']:.2f}, {m['hi']:.2f}]"


def predict(inp):
    p = subprocess.run([CLI, "predict", "-"], input=json.dumps(inp), capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def acc(t):
    return t["n_accepted"] / t["n_drafted"] if t["n_drafted"] else 0.0


def alphas(t):
    return [a for a, r in zip(t["alpha"], t["pos_reached"]) if r > 0] or [0.0]


def cassandra(args):
    print("## Cassandra: acceptance over pruning x truncation, and J\n")
    print("| prune | t | acceptance (accepted/drafted) | mean accepted length | draft c | speedup [95 % interval] | "
          "J (measured, per bit) | lossless |")
    print("|---|---|---|---|---|---|---|---|")
    for p, t in [(0, 0), (0, 4), (0, 6), (0.25, 0), (0.25, 4), (0.4, 4), (0.5, 0), (0.5, 4), (0.5, 6), (0.75, 4)]:
        lvl = {"kind": "self"}
        if p:
            lvl["prune"] = {"ratio": p}
        if t:
            lvl["weight_trunc_bits"] = t
        r = run(f"cassandra_p{p}_t{t}", {"levels": [lvl], "gamma": [3]}, args)
        j = r["_cassandra_j"]
        print(f"| {p} | {t} | {acc(r):.3f} | {r['mean_accepted_length']:.3f} | {r['levels'][1]['cost_ratio']:.3f} | "
              f"{sp(r)} | {j:.3e} | {r['_lossless']} |" if j else f"| {p} | {t} | — | | | | | {r['_lossless']} |")
    print()
    # The paper's headline configuration (Table IV: 40 % pruning, 4-bit weight truncation, 4-bit KV truncation, at
    # gamma 5 and 3), stored compact; then with strict-subset storage (the target verifies on the draft plus the rest
    # of its bits) and with KV selection on the target's cache (half of each cached K/V vector's values dropped).
    print("| configuration | gamma | acceptance | mean accepted length | draft c | speedup [95 % interval] | lossless |")
    print("|---|---|---|---|---|---|---|")
    head = {"kind": "self", "prune": {"ratio": 0.4}, "weight_trunc_bits": 4, "kv_trunc_bits": 4}
    rows = [("prune 0.4 + t 4 + KV t 4 (the paper's default)", head, 5),
            ("prune 0.4 + t 4 + KV t 4 (the paper's default)", head, 3),
            ("the same, strict-subset storage", dict(head, strict_subset=True), 3),
            ("the same, KV selection: half of each K/V vector dropped", dict(head, kv_drop_ratio=0.5), 3)]
    for i, (name, lvl, g) in enumerate(rows):
        r = run(f"cassandra_head_{i}_g{g}", {"levels": [lvl], "gamma": [g]}, args, repeats=args.repeats * 2)
        print(f"| {name} | {g} | {acc(r):.3f} | {r['mean_accepted_length']:.3f} | {r['levels'][1]['cost_ratio']:.3f} | "
              f"{sp(r)} | {r['_lossless']} |")
    print()


def csdrafting(args):
    print("## CS Drafting: Max-Gram, vertical and horizontal cascades against EWIF\n")
    print("| configuration | suite | measured speedup [95 % interval] | mean accepted length | "
          "modeled EWIF (measured alpha, c) | lossless |")
    print("|---|---|---|---|---|---|")
    # The paper's code fills what Max-Gram cannot copy with a greedy bigram chain from a corpus table; the table here
    # is built from the suites that are not measured (held out).
    corpus = os.path.join(args.out, "bigram_corpus.jsonl")
    os.makedirs(args.out, exist_ok=True)
    with open(corpus, "w") as out:
        for held in ("code_completion", "question_answer", "structured_lists"):
            with open(f"datasets/{held}.jsonl") as f:
                out.write(f.read().rstrip("\n") + "\n")
    mg = {"kind": "maxgram", "bigram_corpus": corpus}
    rows = [
        ("Max-Gram (csdrafting), gamma 3", {"levels": [mg], "gamma": [3]}, "chain"),
        ("Max-Gram (periodic), gamma 3", {"levels": [dict(mg, maxgram={"mode": "periodic"})], "gamma": [3]}, "chain"),
        ("Max-Gram (csdrafting), no bigram table, gamma 3", {"levels": [{"kind": "maxgram"}], "gamma": [3]}, "chain"),
        ("small draft, gamma 3", {"levels": [{"kind": "model", "model_path": SMALL}], "gamma": [3]}, "chain"),
        ("vertical: small (3) <- Max-Gram (3)", {"levels": [{"kind": "model", "model_path": SMALL}, mg], "gamma": [3, 3]}, "vertical"),
        ("vertical, threshold lengths", {"levels": [{"kind": "model", "model_path": SMALL}, mg], "gamma": [3, 3],
                                          "length_mode": "threshold"}, "threshold"),
        ("horizontal: 2 small then 2 Max-Gram", {"levels": [{"kind": "model", "model_path": SMALL}, mg],
                                                 "k_matrix": [[0, 2, 2], [0, 0, 3], [0, 0, 0]]}, "horizontal"),
    ]
    for suite in [args.dataset, "datasets/copy_from_context.jsonl"]:
        for name, cfg, kind in rows:
            r = run("csd_" + name.replace(",", "").replace(" ", "_").replace(":", "").replace("<-", "from") + "_" +
                    os.path.basename(suite).split(".")[0], cfg, args, suite)
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
            print(f"| {name} | {os.path.basename(suite)} | {sp(r)} | {r['mean_accepted_length']:.3f} | "
                  f"{m:.3f} | {r['_lossless']} |")
    print()


def mlspecqd(args):
    print("## ML-SpecQD: an MXFP4 draft and a multi-level stack\n")
    print("| configuration | measured speedup [95 % interval] | acceptance fraction | S = 1/c | "
          "Eq. 1 / multi-level (modeled) | lossless |")
    print("|---|---|---|---|---|---|")
    for g in (3, 4):
        r = run(f"qd_mxfp4_g{g}", {"levels": [{"kind": "self", "weight_format": "mxfp4"}], "gamma": [g]}, args)
        a, c = acc(r), r["levels"][1]["cost_ratio"]
        m = predict({"mlspecqd": [{"alpha": a, "n": g, "s": 1 / c}]})["mlspecqd"]["speedup"]
        print(f"| self MXFP4, gamma {g} | {sp(r)} | {a:.3f} | {1 / c:.2f} | {m:.3f} | {r['_lossless']} |")
    r = run("qd_multilevel", {"levels": [{"kind": "self", "weight_format": "mxfp4"}, {"kind": "model", "model_path": SMALL}],
                              "gamma": [3, 3]}, args)
    lv = r["levels"]
    a1, a2 = acc(r), (lv[1]["n_review_accepted"] / lv[1]["n_reviewed"] if lv[1]["n_reviewed"] else 0.0)
    s1, s2 = 1 / lv[1]["cost_ratio"], 1 / lv[2]["cost_ratio"]
    m = predict({"mlspecqd": [{"alpha": a1, "n": 3, "s": s1}, {"alpha": a2, "n": 3, "s": s2}]})["mlspecqd"]["speedup"]
    print(f"| MXFP4 (3) <- small draft (3) | {sp(r)} | {a1:.3f} / {a2:.3f} | {s1:.2f} / {s2:.2f} | {m:.3f} | "
          f"{r['_lossless']} |")
    print()


def cats(args):
    print("## CATS: BPT and speedup against L_SV\n")
    print("| L_DM | L_SV | measured speedup [95 % interval] | mean accepted length | "
          "BPT, Eq. 4 (MiB, decoder weights) | BPT, all bytes (MiB) | lossless |")
    print("|---|---|---|---|---|---|---|")
    for dl, sv in [(2, 4), (2, 6), (2, 8), (2, 10), (3, 7)]:
        r = run(f"cats_{dl}_{sv}", {"levels": [{"kind": "self"}], "gamma": [3], "verification": "cats",
                                    "cats": {"draft_layers": dl, "sv_layers": sv}}, args)
        bpt = f"{r['bytes_per_token'] / 2**20:.2f}" + (
            " (partly modeled)" if any(lv.get("bytes_modeled") or lv.get("bytes_kv_modeled") for lv in r["levels"]) else "")
        print(f"| {dl} | {sv} | {sp(r)} | {r['mean_accepted_length']:.3f} | "
              f"{r['bpt_cats_eq4'] / 2**20:.2f} | {bpt} | {r['_lossless']} |")
    print()


def ghidorah(args):
    print("## Ghidorah: the verification width, measured on this CPU\n")
    print("| width (nodes + root) | measured speedup [95 % interval] | tau (mean accepted length) | "
          "target pass / plain step | lossless |")
    print("|---|---|---|---|---|")
    for b in (1, 3, 7, 15, 31):
        r = run(f"ghidorah_w{b + 1}", {"levels": [{"kind": "model", "model_path": SMALL}], "gamma": [3],
                                       "verification": "tree",
                                       "tree": {"kind": "sequoia", "node_budget": b, "max_depth": 6}}, args)
        print(f"| {b + 1} | {sp(r)} | {r['mean_accepted_length']:.3f} | {r['levels'][0]['cost_ratio']:.3f} | "
              f"{r['_lossless']} |")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--dataset", default="datasets/prose_continuation.jsonl")
    ap.add_argument("--repeats", type=int, default=2,
                    help="passes over the prompts per configuration (the paper's headline rows run twice as many)")
    ap.add_argument("--out", default="/tmp/speculum-repro")
    ap.add_argument("--only", default="", help="comma-separated: cassandra,csdrafting,mlspecqd,cats,ghidorah")
    args = ap.parse_args()
    if not os.path.exists(CLI):
        sys.exit(f"{CLI} not found: build first (./dev test) and run from the repository root")
    parts = {"cassandra": cassandra, "csdrafting": csdrafting, "mlspecqd": mlspecqd, "cats": cats, "ghidorah": ghidorah}
    for name, fn in parts.items():
        if not args.only or name in args.only.split(","):
            fn(args)
    print(f"Lossless check: {RUNS[0] - len(FAILED)} of {RUNS[0]} runs identical to the target's greedy output" +
          (": DIFFERS in " + ", ".join(FAILED) if FAILED else "."))
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
