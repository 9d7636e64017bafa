#!/usr/bin/env python3
"""Measures the drafting families of issue #28 (the statistical drafters, draft kind "ngram"; Max-Gram; the bundled
small draft; the bundled EAGLE-3 head and MTP layer, each as a chain and a dynamic tree) on the bundled target: for each
drafter and prompt suite, tokens per target pass / accepted share of drafted tokens / speedup over plain decoding
(each prompt's speculative run and its baseline back to back, as `speculum-cli run` measures). Development tool:
run it on a quiet machine from the repository root after building, e.g.

    python3 tools/perf/ngram_drafters.py --gamma 4 [--build build] [--tokens 48] [--prompts 16] [--only TEXT[,TEXT...]]

Each cell: tokens per target pass / accepted share of the drafted tokens / c (one draft call over one target
step, measured) / speedup. It prints one row per drafter as it goes, then a Markdown table (docs/performance.md)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def ngram(method, **kw):
    d = {"method": method}
    d.update(kw)
    return {"kind": "ngram", "ngram": d}


DRAFTERS = [
    ("ngram-simple (12, 48)", ngram("ngram-simple")),
    ("ngram-simple (n 3)", ngram("ngram-simple", size_n=3, size_m=8)),
    ("ngram-map-k (12, 48)", ngram("ngram-map-k")),
    ("ngram-map-k (n 3, m 8)", ngram("ngram-map-k", size_n=3, size_m=8)),
    ("ngram-map-k4v (n 3, m 8)", ngram("ngram-map-k4v", size_n=3, size_m=8)),
    ("ngram-mod (24, 48..64)", ngram("ngram-mod")),
    ("ngram-mod (n 4, 1..8)", ngram("ngram-mod", mod_n_match=4, mod_n_min=1, mod_n_max=8)),
    ("ngram-cache", ngram("ngram-cache")),
    ("prompt-lookup (5..5)", ngram("prompt-lookup")),
    ("prompt-lookup (1..4)", ngram("prompt-lookup", lookup_min=1, lookup_max=4)),
    ("suffix (alpha 1)", ngram("suffix")),
    ("suffix (alpha 2)", ngram("suffix", suffix_spec_factor=2.0)),
    ("max-gram", {"kind": "maxgram"}),
    ("bundled small draft (model)", {"kind": "model", "model_path": "resources/models/speculum-draft-f16.gguf"}),
    ("EAGLE-3 head (chain)", {"kind": "eagle3"}),
    ("EAGLE-3 head (dynamic tree 3x4, 8 nodes)", {"kind": "eagle3"},
     {"verification": "tree", "tree": {"kind": "dynamic", "top_k": 3, "depth": 4, "node_budget": 8}}),
    ("MTP layer (chain)", {"kind": "mtp"}),
    ("MTP layer (dynamic tree 3x4, 8 nodes)", {"kind": "mtp"},
     {"verification": "tree", "tree": {"kind": "dynamic", "top_k": 3, "depth": 4, "node_budget": 8}}),
]
SUITES = ["copy_from_context", "code_completion", "prose_continuation", "structured_lists"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--prompts", type=int, default=16, help="prompts of each suite (the config's max_prompts)")
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="",
                    help="measure only the drafters whose name contains one of these comma-separated texts")
    a = ap.parse_args()
    cli = os.path.join(a.build, "app", "speculum-cli")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg_path, rep_path = os.path.join(tmp, "c.json"), os.path.join(tmp, "r.json")
        for name, level, *extra in DRAFTERS:
            if a.only and not any(t and t in name for t in a.only.split(",")):
                continue
            row = [name]
            for suite in SUITES:
                cfg = {"levels": [level], "gamma": [a.gamma], "max_new_tokens": a.tokens, "baseline": True,
                       "max_prompts": a.prompts}
                cfg.update(extra[0] if extra else {})
                with open(cfg_path, "w") as f:
                    json.dump(cfg, f)
                r = subprocess.run([cli, "run", "--config", cfg_path, "--dataset", f"datasets/{suite}.jsonl",
                                    "--report", rep_path], capture_output=True, text=True)
                if r.returncode != 0:
                    print(r.stderr[-400:], file=sys.stderr)
                    row.append("error")
                    continue
                with open(rep_path) as f:
                    t = json.load(f)["total"]
                accepted = t["n_accepted"] / max(1, t["n_drafted"])
                c = t["levels"][1]["cost_ratio"] if len(t["levels"]) > 1 else 0.0
                row.append(f'{t["n_generated"] / t["n_steps"]:.2f} / {accepted:.2f} / {c:.2f} / {t["speedup"]:.2f}x')
            rows.append(row)
            print(" | ".join(row), flush=True)
    print("\n| drafter (gamma %d) | %s |" % (a.gamma, " | ".join(SUITES)))
    print("|---|" + "---|" * len(SUITES))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
