#!/usr/bin/env python3
"""Greedy text of a GGUF in llama.cpp and in Speculum, token for token (development time; issue #22's check that
llama.cpp loads the bundled models and continues them as Speculum does).

    tools/parity/greedy_check.py --oracle /tmp/oracle/build/oracle --cli build/app/speculum-cli \
        --model resources/models/speculum-draft-f16.gguf --prompt "In the beginning God created" -n 32

llama.cpp's side is the oracle (build_oracle.sh): `oracle tokenize` for the prompt's ids, then `oracle logits` over
the whole sequence once per new token (one causal pass, f32 KV cache), taking the argmax of the last position.
Speculum's side is the greedy baseline of `speculum-cli run` on the same ids (model::generate, what
`speculum-cli generate` runs). Prints both id lists, the first
position where they part and, there, llama.cpp's top-two logit gap (a gap near the two programs' rounding
difference, docs/models.md, is a near-tie rather than a defect). Exit status 0 when they agree on every token.
"""
import argparse
import json
import os
import struct
import sys
import tempfile

from parity import run


def last_row(path, n_pos):
    raw = open(path, "rb").read()
    vals = struct.unpack(f"<{len(raw) // 4}f", raw)
    n_vocab = len(vals) // n_pos
    return vals[(n_pos - 1) * n_vocab:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--cli", default="build/app/speculum-cli")
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("-n", type=int, default=32, help="new tokens")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "prompt.txt")
        open(text, "w").write(a.prompt)
        ids = [int(x) for x in run([a.oracle, "tokenize", a.model, text]).split()]
        seq, gaps = list(ids), []
        out = os.path.join(tmp, "logits.f32")
        for _ in range(a.n):
            run([a.oracle, "logits", a.model, ",".join(map(str, seq)), out])
            row = last_row(out, len(seq))
            top = sorted(range(len(row)), key=lambda i: -row[i])[:2]
            seq.append(top[0])
            gaps.append(row[top[0]] - row[top[1]])
        ref = seq[len(ids):]
    # Speculum: the baseline of a speculative run is plain greedy decoding (model::generate), and the run's report
    # holds its ids; a Max-Gram drafter keeps the run itself cheap.
    with tempfile.TemporaryDirectory() as tmp:
        cfg, rep = os.path.join(tmp, "cfg.json"), os.path.join(tmp, "report.json")
        json.dump({"levels": [{"kind": "maxgram"}], "gamma": [1], "sampling": {"temperature": 0.0},
                   "baseline": True}, open(cfg, "w"))
        run([a.cli, "run", "--config", cfg, "-m", a.model, "--prompt-ids", ",".join(map(str, ids)), "-n", str(a.n),
             "--report", rep])
        got = json.load(open(rep))["runs"][0]["baseline_tokens"]
    print("prompt ids:", ",".join(map(str, ids)))
    print("llama.cpp:", ",".join(map(str, ref)))
    print("Speculum: ", ",".join(map(str, got)))
    part = next((i for i, (x, y) in enumerate(zip(ref, got)) if x != y), None)
    if part is None and len(ref) == len(got):
        print("identical: %d tokens (smallest top-two gap along llama.cpp's path %.4f)" % (len(ref), min(gaps)))
        return 0
    if part is None:  # one side stopped early (an end-of-text token)
        print("equal for %d tokens, then Speculum gave %d and llama.cpp %d" % (min(len(ref), len(got)), len(got),
                                                                              len(ref)))
        return 1
    print("part at token %d; llama.cpp's top-two gap there %.4f" % (part, gaps[part]))
    return 1


if __name__ == "__main__":
    sys.exit(main())
