#!/usr/bin/env bash
# Reproduces Speculum's bundled models end to end (see tools/train/README.md and resources/models/README.md):
# corpus, tokenizer, prompt suites, both models (replaying by step the schedules the committed files were trained
# with; they ran concurrently, target on 2 threads and draft on 1), export, evaluation, model card.
set -euo pipefail
cd "$(dirname "$0")"
PY=/usr/bin/python3
mkdir -p runs
$PY corpus.py
$PY bpe.py train --vocab 2048
$PY prepare.py
$PY make_datasets.py
$PY check_pretokenizer.py
OMP_WAIT_POLICY=PASSIVE $PY train.py --config target --steps 565 --decay-at 452 --batch 16 --seq 256 --lr 2e-3 \
    --warmup 100 --wd 0.1 --seed 1234 --threads 2 --bf16 --eval-every 100 --eval-windows 8 --val-windows 32 \
    --out runs/target.pt > runs/target.log 2>&1 &
$PY train.py --config draft --steps 636 --decay-at 509 --batch 16 --seq 256 --lr 3e-3 \
    --warmup 100 --wd 0.1 --seed 1234 --threads 1 --bf16 --eval-every 200 --eval-windows 16 --val-windows 48 \
    --out runs/draft.pt > runs/draft.log 2>&1 &
wait
$PY export_gguf.py --ckpt runs/target.pt --name speculum-target --out ../../resources/models/speculum-target-f16.gguf
$PY export_gguf.py --ckpt runs/draft.pt --name speculum-draft --out ../../resources/models/speculum-draft-f16.gguf
$PY val_loss.py
$PY evaluate.py
$PY make_card.py
