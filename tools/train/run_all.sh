#!/usr/bin/env bash
# Reproduces Speculum's bundled model family end to end (see tools/train/README.md and resources/models/README.md):
# corpus, tokenizer, prompt suites, the three models (replaying by step the schedules the committed files were
# trained with), export, validation, evaluation, model card. About 2 hours on a quiet 2-core machine.
# Every training run checkpoints; after an interruption, run this script again: --resume continues each run.
set -euo pipefail
cd "$(dirname "$0")"
PY=/usr/bin/python3
W=kjv=0.3,py=0.3,qa=0.12,lib=0.18,sql=0.1
PREV=69be2a1  # the commit whose 256-context models the Session 11 drafts were continued from
DRAFT11=3fd06cb  # the last commit with the Session 11 small draft, which the distilled one continues
mkdir -p runs
$PY corpus.py
$PY bpe.py train --vocab 2048
$PY prepare.py
$PY make_datasets.py
$PY check_pretokenizer.py  # the regex against a scanner with llama.cpp's GPT-2 splitting rules
for f in speculum-target-f16.gguf speculum-draft-f16.gguf; do
    [[ -s runs/prev-$f ]] || git -C ../.. show "$PREV:resources/models/$f" > "runs/prev-$f"
done
export OMP_WAIT_POLICY=PASSIVE
common=(--wd 0.1 --seed 1234 --weights "$W" --bf16 --eval-windows 8 --val-windows 48 --resume)
# target: 36.7 M parameters from scratch, 512-token sequences, 1024 in the decay phase
[[ -s runs/target.pt ]] || $PY train.py --config target --steps 850 --decay-at 720 --batch 16 --seq 512 \
    --long-seq 1024 --lr 1.5e-3 --warmup 120 --threads 2 --eval-every 100 --ckpt-every 50 \
    "${common[@]}" --out runs/target.pt >> runs/target.log 2>&1
$PY export_gguf.py --ckpt runs/target.pt --name speculum-target --type bf16 \
    --out ../../resources/models/speculum-target-bf16.gguf
# The drafts are distilled from the exported target (distill.py, Session 21): on a CUDA GPU (one H200 took 330 s and
# 290 s); on this CPU the same token counts would take days. The small draft continues from its Session 11 file
# (itself continued by train.py from the 69be2a1 draft), the mid-level draft starts from random weights. The steps
# and decay points replay the budgeted runs (--time-budget 330 / 290) by step; GPU kernels make the weights differ
# in the last bits from run to run.
[[ -s runs/prev11-speculum-draft-f16.gguf ]] || git -C ../.. show "$DRAFT11:resources/models/speculum-draft-f16.gguf" \
    > runs/prev11-speculum-draft-f16.gguf
[[ -s runs/draft_kd.pt ]] || $PY distill.py --config draft --init-gguf runs/prev11-speculum-draft-f16.gguf \
    --teacher-gguf ../../resources/models/speculum-target-bf16.gguf --steps 5648 --decay-at 4518 --batch 64 \
    --seq 1024 --lr 1.5e-3 --warmup 100 --eval-every 1000 --out runs/draft_kd.pt >> runs/draft_kd.log 2>&1
[[ -s runs/mid_kd.pt ]] || $PY distill.py --config mid --teacher-gguf ../../resources/models/speculum-target-bf16.gguf \
    --steps 2920 --decay-at 2336 --batch 64 --seq 1024 --lr 2e-3 --warmup 100 --eval-every 1000 \
    --out runs/mid_kd.pt >> runs/mid_kd.log 2>&1
$PY export_gguf.py --ckpt runs/mid_kd.pt --name speculum-mid --out ../../resources/models/speculum-mid-f16.gguf
$PY export_gguf.py --ckpt runs/draft_kd.pt --name speculum-draft --out ../../resources/models/speculum-draft-f16.gguf
$PY val_loss.py --previous runs/prev-speculum-target-f16.gguf
$PY evaluate.py --threads 2 --limit 12
$PY make_card.py
