#!/usr/bin/python3
# Tokenizes tools/train/data/{train,heldout}.jsonl with the trained BPE into one uint16 token stream per source
# (kjv, py, qa): each document's tokens followed by EOS. Output: tools/train/data/<split>_<src>.npy.
import json
import os
import sys
import time

import numpy as np

from bpe import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")


def main():
    tok = Tokenizer.load(os.path.join(DATA, "tokenizer.json"))
    t0 = time.time()
    for split in ("train", "heldout"):
        streams, nbytes = {}, {}
        with open(os.path.join(DATA, split + ".jsonl")) as f:
            for line in f:
                d = json.loads(line)
                ids = tok.encode(d["text"]) + [tok.eos_id]
                if tok.decode(ids) != d["text"]:
                    raise RuntimeError("round trip failed for %s" % d["name"])
                streams.setdefault(d["src"], []).extend(ids)
                nbytes[d["src"]] = nbytes.get(d["src"], 0) + len(d["text"])
        for src, ids in sorted(streams.items()):
            np.save(os.path.join(DATA, "%s_%s.npy" % (split, src)), np.array(ids, dtype=np.uint16))
            print("%s/%s: %d tokens, %.2f bytes/token (%.1fs)" % (split, src, len(ids), nbytes[src] / len(ids),
                                                                   time.time() - t0), flush=True)


if __name__ == "__main__":
    sys.exit(main())
