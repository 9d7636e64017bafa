#!/usr/bin/python3
# Cross-checks bpe.PAT (the regex used for training and encoding) against a hand-written scanner with the
# semantics of llama.cpp's hand-coded GPT-2 splitter (contractions, " ?letters", " ?digits", " ?other",
# whitespace run minus its last character when more text follows, else the whole run), over the whole corpus
# and the dataset prompts. ASCII character classes only, as in the corpus.
import json
import os
import sys

from bpe import PAT

HERE = os.path.dirname(os.path.abspath(__file__))
WS = set(" \t\n\x0b\x0c\r")


def kind(c):
    if c is None:
        return None
    if c.isascii() and c.isalpha():
        return "L"
    if c.isascii() and c.isdigit():
        return "N"
    if c in WS:
        return "S"
    return "P"


def scan(text):
    out, pos, n = [], 0, len(text)
    at = lambda i: text[i] if i < n else None  # noqa: E731
    while pos < n:
        c = text[pos]
        if c == "'" and pos + 1 < n:
            if text[pos + 1] in "stmd":
                out.append(text[pos:pos + 2])
                pos += 2
                continue
            if text[pos + 1:pos + 3] in ("re", "ve", "ll"):
                out.append(text[pos:pos + 3])
                pos += 3
                continue
        k = kind(at(pos + 1)) if c == " " else kind(c)
        if k in ("L", "N", "P"):
            end = pos + (c == " ")
            while kind(at(end)) == k:
                end += 1
            out.append(text[pos:end])
            pos = end
            continue
        run = 0
        while kind(at(pos + run)) == "S":
            run += 1
        if run > 1 and pos + run < n:
            run -= 1
        run = max(run, 1)
        out.append(text[pos:pos + run])
        pos += run
    return out


def main():
    texts = []
    for name in ("train.jsonl", "heldout.jsonl"):
        with open(os.path.join(HERE, "data", name)) as f:
            texts += [json.loads(line)["text"] for line in f]
    ds = os.path.join(HERE, "..", "..", "datasets")
    for fn in sorted(os.listdir(ds)):
        if fn.endswith(".jsonl"):
            with open(os.path.join(ds, fn)) as f:
                texts += [json.loads(line)["prompt"] for line in f]
    texts += ["  two  spaces\n\n\tand tabs", "don't  'll 's", "abc   ", "\n\n\n", "x\t\ty", " 'quoted' ", "a  (b)"]
    bad = 0
    for t in texts:
        a, b = PAT.findall(t), scan(t)
        if a != b:
            bad += 1
            if bad <= 3:
                i = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y) if any(
                    x != y for x, y in zip(a, b)) else min(len(a), len(b))
                print("MISMATCH at piece %d: regex %r vs scanner %r" % (i, a[i:i + 3], b[i:i + 3]))
    print("%d texts, %d mismatches" % (len(texts), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
