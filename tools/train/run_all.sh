#!/usr/bin/env bash
# Reproduces Speculum's bundled model family end to end (see tools/train/README.md and resources/models/README.md):
# corpus, tokenizer, prompt suites, the three models (replaying by step the schedules the committed files were
# trained with), export, validation, evaluation, model card. About 2 hours on a quiet 2-core machine.
# Every training run checkpoints; after an interruption, run this script again: --resume continues each run.
set -euo pipefail
cd "$(dirname "$0")"
PY=/usr/bin/python3
W=kjv=0.3,py=0.3,qa=0.12,lib=0.18,sql=0.1
PREV=69be2a1  # the commit whose 256-context models the drafts are continued from
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
# small draft: the previous 1.3 M draft, continued at 1024 tokens on the whole corpus
[[ -s runs/draft.pt ]] || $PY train.py --config draft --init-gguf runs/prev-speculum-draft-f16.gguf --steps 200 \
    --decay-at 150 --batch 8 --seq 1024 --lr 1.5e-3 --warmup 20 --threads 1 --eval-every 50 --ckpt-every 25 \
    "${common[@]}" --out runs/draft.pt >> runs/draft.log 2>&1
# mid-level draft: the previous 10 M target, continued likewise
[[ -s runs/mid.pt ]] || $PY train.py --config mid --init-gguf runs/prev-speculum-target-f16.gguf --steps 150 \
    --decay-at 110 --batch 8 --seq 1024 --lr 1e-3 --warmup 20 --threads 2 --eval-every 50 --ckpt-every 25 \
    "${common[@]}" --out runs/mid.pt >> runs/mid.log 2>&1
# target: 36.7 M parameters from scratch, 512-token sequences, 1024 in the decay phase
[[ -s runs/target.pt ]] || $PY train.py --config target --steps 850 --decay-at 720 --batch 16 --seq 512 \
    --long-seq 1024 --lr 1.5e-3 --warmup 120 --threads 2 --eval-every 100 --ckpt-every 50 \
    "${common[@]}" --out runs/target.pt >> runs/target.log 2>&1
$PY export_gguf.py --ckpt runs/target.pt --name speculum-target --type bf16 \
    --out ../../resources/models/speculum-target-bf16.gguf
$PY export_gguf.py --ckpt runs/mid.pt --name speculum-mid --out ../../resources/models/speculum-mid-f16.gguf
$PY export_gguf.py --ckpt runs/draft.pt --name speculum-draft --out ../../resources/models/speculum-draft-f16.gguf
$PY val_loss.py --previous runs/prev-speculum-target-f16.gguf
$PY evaluate.py --threads 2 --limit 12
$PY make_card.py
