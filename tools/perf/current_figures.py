#!/usr/bin/env python3
"""Regenerates the current tables of docs/performance.md on this machine: one Markdown section per goal, each with
the commands it ran, the machine, and a median with the range over --rounds repeated measurements.

Development tool: build first (./dev build), then run it from the repository root on a quiet machine (no builds,
no other benchmarks: the figures are ratios measured within one run, but the machine's own noise still shows), e.g.

    python3 tools/perf/current_figures.py                          # every section that needs nothing else
    python3 tools/perf/current_figures.py --only speculative --rounds 3
    python3 tools/perf/current_figures.py --only runtime --oracle /tmp/oracle/build-lf/oracle   # against llama.cpp

Sections (--only, comma-separated):
  runtime      prompt (pp512, pp16) and decode (tg128) tokens/s of Speculum against llama.cpp on the same GGUFs,
               one file per weight type, interleaved A B A B (needs --oracle: tools/parity/build_oracle.sh's binary)
  verify       what a batched verification pass of n = 2..16 tokens costs against one decode step, and decode's
               share of the measured read bandwidth (`speculum-cli bench` on synthetic models and the bundled target)
  speculative  each drafter family on the four bundled suites: median per-prompt speedup with its 95 % interval
               (`speculum-cli run --repeats`), tokens per target pass, the draft's measured c, the lossless check
  compact      compact self-drafts' c against the bytes a pass reads, on a 180 MiB synthetic BF16 target
               (tools/perf/compact_draft_bench.cpp, built here with g++)
  sweeps       the job system: the sweep machinery's overhead against a serial loop, configurations per minute,
               cancel latency (`speculum-cli sweep --bench`)
  hostile      peak memory on inputs that used to exhaust it, and the refusal of an impossible model
Work files go to --work (default /tmp/speculum-figures).
"""
import argparse
import json
import os
import platform
import re
import statistics as st
import subprocess
import sys
import time

CLI = "build/app/speculum-cli"
SMALL = "resources/models/speculum-draft-f16.gguf"
MID = "resources/models/speculum-mid-f16.gguf"
SUITES = ["copy_from_context", "code_completion", "prose_continuation", "structured_lists"]
LIBS = ["build/core/libspeculum_core.a", "build/kernels/libspeculum_kernels.a", "-ltbb", "-lopenblas", "-lpcre2-8",
        "-lcrypto", "-lpng"]


def sh(cmd, **kw):
    """Runs a command (a list), returns its stdout; a failure stops the script with the command and its stderr."""
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return p.stdout


def rng(xs, f="{:.2f}"):
    """median [min, max] of repeated measurements."""
    if not xs:
        return "—"
    if len(xs) == 1:
        return f.format(xs[0])
    return f"{f.format(st.median(xs))} [{f.format(min(xs))}, {f.format(max(xs))}]"


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    return (f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}; commit {head}; "
            f"load average {os.getloadavg()[0]:.2f} at the start; {time.strftime('%Y-%m-%d')}")


def build_tool(src, out):
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        sh(["g++", "-O2", "-DNDEBUG", "-std=c++20", "-I.", src] + LIBS + ["-o", out])
    return out


# ---- runtime: against llama.cpp ----------------------------------------------------------------------------------


def runtime(a):
    if not a.oracle:
        print("## Runtime against llama.cpp\n\nskipped: --oracle not given (tools/parity/build_oracle.sh)\n")
        return
    writer = build_tool("tools/perf/write_synthetic_target.cpp", os.path.join(a.work, "write_synthetic_target"))
    d = os.path.join(a.work, "runtime")
    os.makedirs(d, exist_ok=True)
    spec = {"arch": "llama", "n_vocab": 32000, "n_embd": 1024, "n_layer": 4, "n_head": 16, "n_head_kv": 16,
            "n_ff": 2816, "n_ctx": 4096, "type": "f16", "seed": 13}
    f16 = os.path.join(d, "f16.gguf")
    if not os.path.exists(f16):
        with open(os.path.join(d, "f16.json"), "w") as f:
            json.dump(spec, f)
        sh([writer, os.path.join(d, "f16.json"), f16, "-"])
    files = {}
    for t in a.types.split(","):
        path = os.path.join(d, t + ".gguf")
        if t != "f16" and not os.path.exists(path):
            sh([a.oracle, "quantize", f16, path, t])
        files[t] = path
    print("## Runtime against llama.cpp\n")
    print(f"Machine: {machine()}.\n")
    print("```sh")
    print(f"python3 tools/perf/current_figures.py --only runtime --oracle ORACLE --rounds {a.rounds} --types {a.types}")
    print(f"# per round and type: ORACLE bench FILE P 128 {a.threads}, then")
    print(f"# speculum-cli bench -m FILE -t {a.threads} --prompt-tokens P --tokens 128 --batches 1 --repeats 1 "
          "--membw-mb 0 --json   (P = 512, then 16)")
    print("```\n")
    print(f"Files: a random-weight llama (4 layers, width 1024, n_ff 2816, vocabulary 32000) written as F16 by "
          f"tools/perf/write_synthetic_target.cpp and quantized by llama.cpp's own code (`oracle quantize`). "
          f"{a.threads} threads. Ratio = Speculum / llama.cpp tokens/s, median [min, max] over {a.rounds} interleaved "
          f"rounds.\n")
    print("| type | pp512 llama.cpp | pp512 Speculum | **pp512 ratio** | tg128 after 512, ratio | pp16 ratio | "
          "tg128 after 16, ratio |")
    print("|---|---|---|---|---|---|---|")
    for t, path in files.items():
        res = {}
        for pp in (512, 16):
            ll, ls, tl, ts = [], [], [], []
            for _ in range(a.rounds):
                o = sh([a.oracle, "bench", path, str(pp), "128", str(a.threads)]).split()
                ll.append(float(o[1]))
                tl.append(float(o[4]))
                j = json.loads(sh([CLI, "bench", "-m", path, "-t", str(a.threads), "--prompt-tokens", str(pp),
                                   "--tokens", "128", "--batches", "1", "--repeats", "1", "--membw-mb", "0", "--json"]))
                ls.append(j["prompt_tokens_per_s"])
                ts.append(j["decode_tokens_per_s"])
            res[pp] = (ll, ls, [s / l for s, l in zip(ls, ll)], [s / l for s, l in zip(ts, tl)])
        print(f"| {t.upper()} | {st.median(res[512][0]):.0f} | {st.median(res[512][1]):.0f} | "
              f"**{rng(res[512][2])}x** | {rng(res[512][3])}x | {rng(res[16][2])}x | {rng(res[16][3])}x |")
        sys.stdout.flush()
    print()


# ---- verify: batched passes against decode -----------------------------------------------------------------------


def verify(a):
    print("## Verification cost and decode bandwidth\n")
    print(f"Machine: {machine()}.\n")
    runs = [("synthetic F16, 4 layers x 2048 (642 MiB)", ["--synthetic", "f16", "--layers", "4", "--embd", "2048"]),
            ("synthetic BF16, 4 layers x 2048", ["--synthetic", "bf16", "--layers", "4", "--embd", "2048"]),
            ("synthetic Q8_0, 4 layers x 2048 (341 MiB)", ["--synthetic", "q8_0", "--layers", "4", "--embd", "2048"]),
            ("synthetic Q4_0, 4 layers x 2048", ["--synthetic", "q4_0", "--layers", "4", "--embd", "2048"]),
            ("the bundled target (BF16, 68 MiB)", [])]
    print("```sh")
    for _, args in runs:
        print(f"speculum-cli bench {' '.join(args)} --tokens 16 --repeats 3 --json".replace("  ", " "))
    print("```\n")
    print(f"Each command {a.rounds} times (median [min, max]); 2 threads, wall clock. n = k: one causal pass over k "
          "tokens against one single-token pass, fastest of 3; decode share = bytes a step reads per second against "
          "the probe's read bandwidth.\n")
    print("| model | decode tokens/s | decode / read bandwidth | n = 2 | n = 4 | **n = 8** | n = 16 |")
    print("|---|---|---|---|---|---|---|")
    for name, args in runs:
        tps, share, ratios = [], [], {2: [], 4: [], 8: [], 16: []}
        for _ in range(a.rounds):
            j = json.loads(sh([CLI, "bench"] + args + ["--tokens", "16", "--repeats", "3", "--json"]))
            tps.append(j["decode_tokens_per_s"])
            share.append(100 * j["bandwidth_ratio"])
            for b in j["batches"]:
                if b["n"] in ratios:
                    ratios[b["n"]].append(b["vs_single"])
        print(f"| {name} | {rng(tps, '{:.1f}')} | {rng(share, '{:.0f}')} % | {rng(ratios[2])}x | {rng(ratios[4])}x | "
              f"**{rng(ratios[8])}x** | {rng(ratios[16])}x |")
        sys.stdout.flush()
    print()


# ---- speculative: the drafter families on the bundled suites -----------------------------------------------------

FAMILIES = [
    ("small draft model, γ 5 (the default config)", [{"kind": "model", "model_path": SMALL}], [5], {}),
    ("MTP layer, chain γ 3", [{"kind": "mtp"}], [3], {}),
    ("EAGLE-3 head, chain γ 3", [{"kind": "eagle3"}], [3], {}),
    ("DFlash block draft, γ 3", [{"kind": "dflash"}], [3], {}),
    ("DFlash block draft, γ 7 (the whole block)", [{"kind": "dflash"}], [7], {}),
    ("DFlash block draft, tree 2-2-1 from the block's top-2", [{"kind": "dflash"}], [3],
     {"verification": "tree", "tree": {"kind": "static", "branching": [2, 2, 1]}}),
    ("DSpark block draft, γ 4", [{"kind": "dspark"}], [4], {}),
    ("DSpark block draft, γ 8, conf-min 0.3", [{"kind": "dspark"}], [8], {"p_min": 0.3}),
    ("suffix decoding, γ 4", [{"kind": "ngram", "ngram": {"method": "suffix"}}], [4], {}),
    ("ngram-cache, γ 4", [{"kind": "ngram", "ngram": {"method": "ngram-cache"}}], [4], {}),
    ("Max-Gram, γ 2", [{"kind": "maxgram"}], [2], {}),
    ("mid draft model, γ 4", [{"kind": "model", "model_path": MID}], [4], {}),
    ("cascade mid (6) ← small (3)", [{"kind": "model", "model_path": MID}, {"kind": "model", "model_path": SMALL}],
     [6, 3], {}),
    ("Sequoia tree, 8 nodes, small draft", [{"kind": "model", "model_path": SMALL}], [5],
     {"verification": "tree", "tree": {"kind": "sequoia", "node_budget": 8, "max_depth": 6}}),
    ("self-draft: early exit after layer 3, γ 2", [{"kind": "self", "exit_layer": 3}], [2], {}),
    ("self-draft: prune 0.5 + t 4 (compact), γ 3",
     [{"kind": "self", "prune": {"ratio": 0.5}, "weight_trunc_bits": 4}], [3], {}),
]


def speculative(a):
    d = os.path.join(a.work, "speculative")
    os.makedirs(d, exist_ok=True)
    print("## Speculative decoding: every drafter family on the bundled suites\n")
    print(f"Machine: {machine()}.\n")
    print("```sh")
    print(f"python3 tools/perf/current_figures.py --only speculative --rounds {a.rounds} --prompts {a.prompts}")
    print(f"# per row and suite: speculum-cli run --config ROW.json --dataset datasets/SUITE.jsonl --repeats "
          f"{a.rounds} --report R.json")
    print("```\n")
    print(f"The bundled target (36.7 M parameters, BF16), greedy, the first {a.prompts} prompts of each suite, "
          f"{a.tokens} new tokens each, 2 threads. Each prompt's speculative decode is followed by its plain decode "
          f"in the same process, {a.rounds} passes; a cell is the **median per-prompt speedup [its 95 % interval]**, "
          "then tokens per target pass and the first level's measured c (one draft call over one target step). "
          "Every row's lossless check is in the last column.\n")
    print("| drafter | " + " | ".join(SUITES) + " | lossless |")
    print("|---|" + "---|" * len(SUITES) + "---|")
    for name, levels, gamma, extra in FAMILIES:
        if a.families and not re.search(a.families, name):
            continue
        cells, lossless = [], []
        for suite in SUITES:
            cfg = dict({"levels": levels, "gamma": gamma, "max_new_tokens": a.tokens, "max_prompts": a.prompts,
                        "dataset": f"datasets/{suite}.jsonl"}, **extra)
            key = re.sub(r"[^a-z0-9]+", "_", name.lower())[:40] + "_" + suite
            path, rep = os.path.join(d, key + ".json"), os.path.join(d, key + ".report.json")
            with open(path, "w") as f:
                json.dump(cfg, f)
            out = sh([CLI, "run", "--config", path, "--repeats", str(a.rounds), "--report", rep])
            with open(rep) as f:
                r = json.load(f)
            t, m = r["total"], r["repeated"]["speedup"]
            c = t["levels"][1]["cost_ratio"] if len(t["levels"]) > 1 else 0.0
            cells.append(f"**{m['median']:.2f}x** [{m['lo']:.2f}, {m['hi']:.2f}] · {t['mean_accepted_length']:.2f} · "
                         f"c {c:.2f}")
            lossless.append("lossless check: identical" in out and t.get("lossless_mismatch") == -1)
        print(f"| {name} | " + " | ".join(cells) + f" | {sum(lossless)} of {len(lossless)} |")
        sys.stdout.flush()
    print()


# ---- compact: c against bytes ------------------------------------------------------------------------------------


def compact(a):
    tool = build_tool("tools/perf/compact_draft_bench.cpp", os.path.join(a.work, "compact_draft_bench"))
    print("## Compact drafts: c against the bytes a pass reads\n")
    print(f"Machine: {machine()}.\n")
    print("```sh")
    print(f"python3 tools/perf/current_figures.py --only compact --rounds {a.rounds}")
    print("# = compact_draft_bench --rounds 3 --steps 16, that many times (tools/perf/compact_draft_bench.cpp)")
    print("```\n")
    grid, bw, step = {}, [], []
    for _ in range(a.rounds):
        out = sh([tool, "--rounds", "3", "--steps", "16"])
        bw.append(float(re.search(r"read bandwidth: ([\d.]+)", out).group(1)))
        step.append(float(re.search(r"target decode step: ([\d.]+) ms", out).group(1)))
        for line in out.splitlines():
            f = line.split()
            if len(f) == 9 and f[2] == "compact":
                cell = grid.setdefault((float(f[0]), int(f[1])), {"mib": float(f[3]), "bits": float(f[4]), "c": []})
                cell["c"].append(float(f[8]))
    print(f"A synthetic BF16 llama target of 180 MiB (far above the LLC); 2 threads. Read bandwidth "
          f"{rng(bw, '{:.1f}')} GB/s, the target's decode step {rng(step)} ms over {a.rounds} runs. Each cell: "
          "**c** (draft pass / target step, median [min, max] over the runs) and, in brackets, the bytes a draft pass "
          "reads against the target's (what c would be if the pass were bound by memory).\n")
    truncs = sorted({t for _, t in grid})
    print("| prune \\ t | " + " | ".join(str(t) for t in truncs) + " |")
    print("|---|" + "---|" * len(truncs))
    full = max(v["mib"] for v in grid.values()) if grid else 1.0
    for p in sorted({p for p, _ in grid}):
        row = []
        for t in truncs:
            v = grid.get((p, t))
            row.append(f"**{rng(v['c'])}** ({v['mib'] / full:.2f})" if v else "")
        print(f"| {p:g} | " + " | ".join(row) + " |")
    print()


# ---- sweeps: the job system --------------------------------------------------------------------------------------


def sweeps(a):
    print("## Sweeps on the job system\n")
    print(f"Machine: {machine()}.\n")
    cmds = [("analytic evaluator, 384 configurations", ["docs/examples/sweep_bench.json", "--bench", "--repeats", "21"]),
            ("engine evaluator, bundled models, 15 configurations",
             ["docs/examples/sweep_engine_bundled.json", "--bench", "--repeats", "3"])]
    print("```sh")
    for _, c in cmds:
        print("speculum-cli sweep " + " ".join(c))
    print("```\n")
    print(f"Each command {a.rounds} times (median [min, max]).\n")
    print("| work | pool overhead, wall (sweep job with its store, pool vs inline) | configurations per minute | "
          "cancel latency, median (max) |")
    print("|---|---|---|---|")
    for name, c in cmds:
        over, per_min, cancel, cmax = [], [], [], []
        for _ in range(a.rounds):
            out = sh([CLI, "sweep"] + c)
            m = re.search(r"pool overhead of the sweep machinery: wall ([+-][\d.]+) %", out)
            over.append(float(m.group(1)))
            pool = [ln for ln in out.splitlines() if ln.startswith("sweep job on the pool")]
            if pool:
                per_min.append(float(pool[-1].split()[-1]))  # the row's configs/min column
            m = re.search(r"cancel latency: median ([\d.]+) ms, max ([\d.]+) ms", out)
            if m:
                cancel.append(float(m.group(1)))
                cmax.append(float(m.group(2)))
        print(f"| {name} | {rng(over, '{:+.1f}')} % | {rng(per_min, '{:,.0f}')} | {rng(cancel)} ms "
              f"({max(cmax) if cmax else 0:.1f} ms) |")
        sys.stdout.flush()
    print()


# ---- hostile: memory on inputs that used to exhaust it -----------------------------------------------------------


def peak(cmd, stdout=subprocess.DEVNULL):
    """Peak resident MB and wall seconds of a command, from GNU time."""
    p = subprocess.run(["/usr/bin/time", "-f", "%M %e"] + cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)
    kb, secs = p.stderr.strip().splitlines()[-1].split()
    return int(kb) / 1024, float(secs), p.returncode, p.stderr


def hostile(a):
    import random
    import sqlite3
    d = os.path.join(a.work, "hostile")
    os.makedirs(d, exist_ok=True)
    if not os.path.exists("/usr/bin/time"):
        print("## Hostile and large inputs\n\nskipped: /usr/bin/time (Debian package `time`) is not installed\n")
        return
    print("## Hostile and large inputs\n")
    print(f"Machine: {machine()}.\n")
    # A large result store: one real sweep's rows copied with new hashes.
    db = os.path.join(d, "big.sqlite")
    if not os.path.exists(db):
        sh([CLI, "sweep", "docs/examples/sweep_predict.json", "--db", db])
        con = sqlite3.connect(db)
        cols = [r[1] for r in con.execute("PRAGMA table_info(results)")]
        rows = con.execute(f"SELECT {', '.join(cols)} FROM results").fetchall()
        hi = cols.index("config_hash")
        with con:
            for k in range(a.copies):
                con.executemany(f"INSERT INTO results ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                [r[:hi] + (f"{r[hi]}-{k}",) + r[hi + 1:] for r in rows])
        con.close()
    n = sqlite3.connect(db).execute("SELECT COUNT(*) FROM results").fetchone()[0]
    text = os.path.join(d, "big.txt")
    if not os.path.exists(text):
        words = open("README.md").read().split()
        rnd = random.Random(27)
        with open(text, "w") as f:
            while f.tell() < 100 * 2**20:
                f.write(" ".join(rnd.choice(words) for _ in range(12)) + "\n")
    cases = [(f"results --db big.sqlite --json ({n:,} rows)", [CLI, "results", "--db", db, "--json"]),
             ("results --db big.sqlite --pareto", [CLI, "results", "--db", db, "--pareto"]),
             ("results --db big.sqlite --csv big.csv", [CLI, "results", "--db", db, "--csv",
                                                        os.path.join(d, "big.csv")]),
             ("tokenize --file big.txt (100 MiB of text)", [CLI, "tokenize", "--file", text]),
             ("bench --synthetic f16 --embd 65536 --layers 64 (refused: 6 TiB of weights)",
              [CLI, "bench", "--synthetic", "f16", "--embd", "65536", "--layers", "64"])]
    print("```sh")
    print(f"python3 tools/perf/current_figures.py --only hostile --rounds {a.rounds} --copies {a.copies}")
    print("# the store: speculum-cli sweep docs/examples/sweep_predict.json, its rows copied --copies times")
    print("# each case: /usr/bin/time -f '%M %e' speculum-cli ...")
    print("```\n")
    print(f"Peak resident memory and wall time, median [min, max] over {a.rounds} runs. These are limits and "
          "streaming, not speed goals.\n")
    print("| command | peak RSS (MB) | wall (s) | exit |")
    print("|---|---|---|---|")
    for name, cmd in cases:
        mb, secs, rc = [], [], 0
        for _ in range(a.rounds):
            m, s, rc, _ = peak(cmd)
            mb.append(m)
            secs.append(s)
        print(f"| `{name}` | {rng(mb, '{:.1f}')} | {rng(secs, '{:.2f}')} | {rc} |")
        sys.stdout.flush()
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="runtime,verify,speculative,compact,sweeps,hostile")
    ap.add_argument("--rounds", type=int, default=3, help="repeated measurements per figure (default 3)")
    ap.add_argument("--oracle", default="", help="runtime: llama.cpp's code as tools/parity/build_oracle.sh builds it")
    ap.add_argument("--types", default="f16,bf16,q8_0,q4_0,q4_k_m",
                    help="runtime: weight types (oracle quantize names), e.g. add q4_1,q5_0,q5_1,iq4_nl,q2_k,q3_k,"
                         "q4_k,q5_k,q6_k,iq4_xs for every type")
    ap.add_argument("--threads", type=int, default=2, help="runtime: threads of both engines")
    ap.add_argument("--prompts", type=int, default=12, help="speculative: prompts of each suite")
    ap.add_argument("--tokens", type=int, default=48, help="speculative: new tokens per prompt")
    ap.add_argument("--families", default="", help="speculative: only the rows whose name matches this regex")
    ap.add_argument("--copies", type=int, default=1043, help="hostile: copies of the sweep's rows in the big store")
    ap.add_argument("--work", default="/tmp/speculum-figures")
    a = ap.parse_args()
    if not os.path.exists(CLI):
        sys.exit(f"{CLI} not found: build first (./dev build) and run from the repository root")
    os.makedirs(a.work, exist_ok=True)
    parts = {"runtime": runtime, "verify": verify, "speculative": speculative, "compact": compact, "sweeps": sweeps,
             "hostile": hostile}
    for name in a.only.split(","):
        if name not in parts:
            sys.exit(f"--only: unknown section '{name}' (one of {', '.join(parts)})")
        parts[name](a)


if __name__ == "__main__":
    main()
