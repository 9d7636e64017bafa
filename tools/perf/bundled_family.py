#!/usr/bin/env python3
"""Measures the bundled model family's configurations on the bundled target (issue #22): the small draft at several
draft lengths, Max-Gram, the mid-level draft, the small -> mid -> target cascades, a two-level cascade under
Max-Gram, a Sequoia tree and the target's own self-drafts. Each row is one `speculum-cli run` over the first
--prompts prompts of a suite (baseline and speculative decoding of each prompt back to back in one process) and
prints one Markdown row: mean accepted length (tokens per target pass), each draft level's c (its call over one
target decode step, measured), the target's c (a verification pass over a decode step), the speedup and the
lossless check. Development tool: run it on a quiet machine from the repository root after building, e.g.

    python3 tools/perf/bundled_family.py [--build build] [--dataset datasets/prose_continuation.jsonl] [--prompts 12]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

S = {"kind": "model", "label": "small draft", "model_path": "resources/models/speculum-draft-f16.gguf"}
M = {"kind": "model", "label": "mid draft", "model_path": "resources/models/speculum-mid-f16.gguf"}
G = {"kind": "maxgram", "label": "max-gram"}
ROWS = [
    ("small draft, γ = 3", [S], [3], {}),
    ("small draft, γ = 4", [S], [4], {}),
    ("small draft, γ = 5 (`resources/configs/default.json`)", [S], [5], {}),
    ("small draft, γ = 6", [S], [6], {}),
    ("small draft, γ = 8", [S], [8], {}),
    ("Max-Gram, γ = 2", [G], [2], {}),
    ("mid-level draft, γ = 4", [M], [4], {}),
    ("mid-level draft, γ = 6", [M], [6], {}),
    ("cascade small -> mid -> target, γ = [6, 3]", [M, S], [6, 3], {}),
    ("cascade small -> mid -> target, γ = [8, 4]", [M, S], [8, 4], {}),
    ("small draft <- Max-Gram, γ = [5, 2]", [S, G], [5, 2], {}),
    ("Sequoia tree of 8 nodes from the small draft", [S], [5],
     {"verification": "tree", "tree": {"kind": "sequoia", "node_budget": 8, "max_depth": 6}}),
    ("self-draft: early exit after layer 3 of 11, γ = 2", [{"kind": "self", "exit_layer": 3}], [2], {}),
    ("self-draft: early exit after layer 5 of 11, γ = 2", [{"kind": "self", "exit_layer": 5}], [2], {}),
    ("self-draft: Q8_0 copy of the target (lossy format), γ = 4", [{"kind": "self", "weight_format": "q8_0"}], [4], {}),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--dataset", default="datasets/prose_continuation.jsonl")
    ap.add_argument("--prompts", type=int, default=12)
    ap.add_argument("--tokens", type=int, default=48)
    a = ap.parse_args()
    cli = os.path.join(a.build, "app", "speculum-cli")
    print("| configuration | mean accepted length | draft c | verify pass / decode step | speedup | lossless |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, levels, gamma, extra in ROWS:
            cfg = dict({"levels": levels, "gamma": gamma, "verification": "chain", "sampling": {"temperature": 0.0},
                        "max_new_tokens": a.tokens, "max_prompts": a.prompts, "baseline": True}, **extra)
            path = os.path.join(tmp, "cfg.json")
            json.dump(cfg, open(path, "w"))
            r = subprocess.run([cli, "run", "--config", path, "--dataset", a.dataset], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("%s: %s" % (name, r.stderr.strip()))
            tail = r.stdout[r.stdout.find("---- all prompts"):]
            mal = re.search(r"mean accepted length \(tokens per target pass\): ([\d.]+)", tail).group(1)
            cs = re.findall(r"\n  (\d) (?:target|draft) .*?c = ([\d.]+)", tail)
            tc = [c for lv, c in cs if lv == "0"][0]
            dc = ", ".join(c for lv, c in cs if lv != "0")
            sp = re.search(r"speedup ([\d.]+)x", tail).group(1)
            print("| %s | %s | %s | %s | %sx | %s |" % (name, mal, dc, tc, sp,
                                                       "ok" if "identical" in tail else "MISMATCH"), flush=True)


if __name__ == "__main__":
    sys.exit(main())
