#!/usr/bin/python3
# Byte-level BPE tokenizer (GPT-2 / llama.cpp "gpt2" pre-tokenizer) for Speculum's bundled models: trainer + encoder.
# The encoder reproduces llama.cpp's BPE tokenizer (LLAMA_VOCAB_PRE_TYPE_GPT2) exactly on ASCII text; see PAT.
# Usage: bpe.py train --vocab 2048 --out tools/train/data/tokenizer.json
import argparse
import collections
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# GPT-2's pre-tokenizer, 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ , written for
# Python's `re` (which lacks \p{..}). On ASCII input it is exact: \p{L} = [A-Za-z], \p{N} = [0-9], \s = [\t\n\v\f\r ]
# (Unicode White_Space; Python's own \s would also take \x1c-\x1f, which are excluded here). On non-ASCII input it is
# an approximation ([^\W\d_] for letters, \d for numbers). The training corpus and every dataset prompt are ASCII.
_WS = r"[^\S\x1c-\x1f]"
PAT = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|[_\x1c-\x1f])+|"
                 + _WS + r"+(?!\S|[\x1c-\x1f])|" + _WS + "+")

BOS, EOS = "<|bos|>", "<|eos|>"
# The corpus sources the merges are trained on. Sources added to the corpus later (lib, sql) are tokenized with these
# merges but do not change them, so every model of the family shares one tokenizer.
TOKENIZER_SOURCES = ("kjv", "py", "qa")


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character map (same as llama.cpp's unicode_byte_to_utf8)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2U = bytes_to_unicode()
U2B = {c: b for b, c in B2U.items()}


def pretokenize(text):
    """Splits text into pre-tokens, each mapped to its byte-level unicode string."""
    return ["".join(B2U[b] for b in w.encode("utf-8")) for w in PAT.findall(text)]


def train_bpe(word_counts, n_merges, log=None):
    """Classic BPE on a {word: count} table with incremental pair counts. Ties between equally frequent pairs go to
    the pair first seen in insertion order (deterministic for a deterministic input). Returns [(a, b)]."""
    words = [list(w) for w in word_counts]
    counts = list(word_counts.values())
    pair_count = collections.defaultdict(int)
    pair_where = collections.defaultdict(set)
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += counts[i]
            pair_where[(a, b)].add(i)
    merges = []
    t0 = time.time()
    for step in range(n_merges):
        if not pair_count:
            break
        best = max(pair_count, key=pair_count.get)
        if pair_count[best] < 2:
            break
        merges.append(best)
        a, b = best
        new = a + b
        for i in sorted(pair_where[best]):
            w = words[i]
            c = counts[i]
            # Remove this word's old pairs, merge left to right, add the new pairs.
            for p in zip(w, w[1:]):
                pair_count[p] -= c
                if pair_count[p] <= 0:
                    del pair_count[p]
                pair_where[p].discard(i)
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(new)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for p in zip(out, out[1:]):
                pair_count[p] += c
                pair_where[p].add(i)
        pair_where.pop(best, None)
        if log and (step + 1) % 200 == 0:
            log("merge %d/%d %r (%.1fs)" % (step + 1, n_merges, new, time.time() - t0))
    return merges


class Tokenizer:
    """Byte-level BPE: ids 0..255 are the single bytes (in byte order), then one token per merge, then BOS, EOS."""

    def __init__(self, merges):
        self.merges = [tuple(m) for m in merges]
        self.tokens = [B2U[b] for b in range(256)] + [a + b for a, b in self.merges] + [BOS, EOS]
        self.token_to_id = {t: i for i, t in enumerate(self.tokens)}
        if len(self.token_to_id) != len(self.tokens):
            raise ValueError("duplicate tokens in vocabulary")
        self.ranks = {m: r for r, m in enumerate(self.merges)}
        self.bos_id = self.token_to_id[BOS]
        self.eos_id = self.token_to_id[EOS]
        self._cache = {}

    @staticmethod
    def load(path):
        with open(path) as f:
            return Tokenizer(json.load(f)["merges"])

    def save(self, path, meta):
        with open(path, "w") as f:
            json.dump(dict(meta, merges=[list(m) for m in self.merges]), f)

    def token_types(self):
        # llama.cpp token types: 1 = NORMAL, 3 = CONTROL.
        return [1] * (len(self.tokens) - 2) + [3, 3]

    def _bpe(self, word):
        syms = list(word)
        while len(syms) > 1:
            best, best_rank = None, None
            for k in range(len(syms) - 1):
                r = self.ranks.get((syms[k], syms[k + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = k, r
            if best is None:
                break
            a, b = syms[best], syms[best + 1]
            out, j = [], 0
            while j < len(syms):  # merge every occurrence of the best pair, left to right
                if j + 1 < len(syms) and syms[j] == a and syms[j + 1] == b:
                    out.append(a + b)
                    j += 2
                else:
                    out.append(syms[j])
                    j += 1
            syms = out
        return [self.token_to_id[s] for s in syms]

    def encode(self, text, bos=False):
        ids = [self.bos_id] if bos else []
        for w in pretokenize(text):
            r = self._cache.get(w)
            if r is None:
                r = self._bpe(w)
                if len(self._cache) < 1_000_000:
                    self._cache[w] = r
            ids.extend(r)
        return ids

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            t = self.tokens[i]
            if t in (BOS, EOS):
                continue
            out.extend(U2B[c] for c in t)
        return out.decode("utf-8", errors="replace")


def cmd_train(args):
    t0 = time.time()
    counts = collections.Counter()
    n_docs = 0
    with open(args.corpus) as f:
        for line in f:
            d = json.loads(line)
            if d["src"] in TOKENIZER_SOURCES:
                counts.update(pretokenize(d["text"]))
                n_docs += 1
    print("pre-tokenized %d documents: %d distinct pre-tokens (%.1fs)" % (n_docs, len(counts), time.time() - t0),
          flush=True)
    n_merges = args.vocab - 256 - 2
    merges = train_bpe(counts, n_merges, log=lambda s: print(s, flush=True))
    if len(merges) != n_merges:
        raise RuntimeError("only %d merges found" % len(merges))
    tok = Tokenizer(merges)
    tok.save(args.out, {"vocab_size": len(tok.tokens), "pre": "gpt-2", "bos": BOS, "eos": EOS})
    print("wrote %s: %d tokens (%.1fs)" % (args.out, len(tok.tokens), time.time() - t0))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train the merges on the training corpus")
    t.add_argument("--corpus", default=os.path.join(HERE, "data", "train.jsonl"))
    t.add_argument("--vocab", type=int, default=2048, help="total vocabulary incl. 256 bytes and BOS/EOS")
    t.add_argument("--out", default=os.path.join(HERE, "data", "tokenizer.json"))
    e = sub.add_parser("encode", help="print the token ids of a text")
    e.add_argument("--tokenizer", default=os.path.join(HERE, "data", "tokenizer.json"))
    e.add_argument("text")
    args = ap.parse_args()
    if args.cmd == "train":
        cmd_train(args)
    else:
        tok = Tokenizer.load(args.tokenizer)
        ids = tok.encode(args.text)
        print(ids)
        print([tok.tokens[i] for i in ids])


if __name__ == "__main__":
    sys.exit(main())
