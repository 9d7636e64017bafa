#!/usr/bin/python3
# Validation loss of both exported models on the SAME held-out windows (48 per source, fp32, F16-rounded weights
# as stored in the GGUF), so the card compares like with like. Writes runs/val_common.json.
import json
import os
import sys

import torch

from export_gguf import f16_rounded, load_model
from train import evaluate, load_streams, val_windows

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    torch.set_num_threads(1)
    with open(os.path.join(HERE, "data", "tokenizer.json")) as f:
        bos_id = json.load(f)["vocab_size"] - 2
    windows = val_windows(load_streams("heldout"), 255, bos_id, 48)
    out = {"windows_per_source": 48, "tokens_per_window": 255}
    for name in ("target", "draft"):
        model = f16_rounded(load_model(os.path.join(HERE, "runs", name + ".pt"))[0])
        out[name] = evaluate(model, windows)
        print(name, json.dumps(out[name]), flush=True)
    with open(os.path.join(HERE, "runs", "val_common.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
