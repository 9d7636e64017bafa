#!/usr/bin/env bash
# Reproduces Speculum's bundled models end to end (see tools/train/README.md): corpus, tokenizer, both models, export.
# The two trainings run concurrently (target on 2 threads, draft on 1), as they did for the committed files.
set -euo pipefail
cd "$(dirname "$0")"
PY=/usr/bin/python3
mkdir -p runs
$PY corpus.py
$PY bpe.py train --vocab 2048
$PY prepare.py
$PY train.py --config target --steps 1200 --batch 16 --seq 256 --lr 2e-3 --seed 1234 --threads 2 --bf16 \
    --eval-every 300 --val-windows 48 --max-seconds 4200 --out runs/target.pt > runs/target.log 2>&1 &
$PY train.py --config draft --steps 1500 --batch 16 --seq 256 --lr 3e-3 --seed 1234 --threads 1 --bf16 \
    --eval-every 300 --val-windows 48 --max-seconds 4200 --out runs/draft.pt > runs/draft.log 2>&1 &
wait
$PY export_gguf.py --ckpt runs/target.pt --name speculum-target --out ../../resources/models/speculum-target-f16.gguf
$PY export_gguf.py --ckpt runs/draft.pt --name speculum-draft --out ../../resources/models/speculum-draft-f16.gguf
