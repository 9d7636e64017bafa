#!/usr/bin/python3
# Validation loss of the exported model family on the SAME held-out windows (48 per source, 255 tokens, fp32, the
# weights rounded as stored in the GGUF files), so the card compares like with like. "all" is over the first
# corpus's sources (kjv, py, qa), the windows on which the previous bundled target measured 3.065 nats/token; that
# previous target is measured again here from its GGUF in git history when --previous names it. The added sources
# (lib, sql) are reported separately. Writes runs/val_common.json.
import argparse
import dataclasses
import json
import os
import sys

import torch

from export_gguf import f16_rounded, load_model
from model import CONFIGS, Llama
from train import OLD_SOURCES, SOURCES, evaluate, load_gguf_weights, load_streams, val_windows

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = (("target", "bf16"), ("mid", "f16"), ("draft", "f16"))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--previous", default="",
                    help="GGUF of the previous bundled target (git show 69be2a1:resources/models/"
                         "speculum-target-f16.gguf > prev.gguf) to measure on the same windows")
    args = ap.parse_args()
    torch.set_num_threads(2)
    with open(os.path.join(HERE, "data", "tokenizer.json")) as f:
        bos_id = json.load(f)["vocab_size"] - 2
    old = val_windows(load_streams("heldout", OLD_SOURCES), 255, bos_id, 48)
    new = val_windows(load_streams("heldout", tuple(s for s in SOURCES if s not in OLD_SOURCES)), 255, bos_id, 48)
    out = {"windows_per_source": 48, "tokens_per_window": 255, "all_is_over": list(OLD_SOURCES)}
    models = [(name, f16_rounded(load_model(os.path.join(HERE, "runs", name + ".pt"))[0], wtype))
              for name, wtype in MODELS]
    if args.previous:
        prev = Llama(dataclasses.replace(CONFIGS["mid"], n_ctx=256))
        load_gguf_weights(prev, args.previous)
        models.append(("previous_target", prev.eval()))
    for name, model in models:
        res = evaluate(model, old)
        res.update({k: v for k, v in evaluate(model, new).items() if k != "all"})
        out[name] = res
        print(name, json.dumps({k: round(v, 4) for k, v in res.items()}), flush=True)
    with open(os.path.join(HERE, "runs", "val_common.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
