#!/usr/bin/env bash
# scripts/demo.sh: the main job. With no argument: trains a small GPT-2 from
# scratch (4 layers, 256 wide, 4 heads, 128-token blocks, GPT-2's tokenizer)
# on the five Jane Austen novels in assets/corpora/austen/ on the lazy device
# with `loom train`, holding back the first tenth of the text for evaluation
# (perplexity at every evaluation); saves the model; checks that the
# perplexity fell at every evaluation and that training plus evaluation
# compiled at most 3 graphs (lazy_metrics.json: UncachedCompile) and that the
# run left TensorBoard event files (runs/) and training_curves.svg; then
# generates a sample with `loom generate`.
#   scripts/demo.sh            the GPT-2 job above
#   scripts/demo.sh finetune   fine-tunes a pretrained BERT (scripts/finetune.sh)
# Runs scripts/setup.sh and a Release build of the `loom` CLI first (quick
# when both are already done).
#
# Environment (optional): LOOM_BUILD_DIR (default: build), LOOM_JOBS,
# LOOM_DEMO_OUT (default: out/gpt2_austen), LOOM_DEMO_STEPS (optimizer steps,
# default 160), LOOM_DEMO_EVAL_STEPS (default: a quarter of the steps),
# LOOM_DEMO_EVAL_SAMPLES (held-out blocks evaluated, default 128).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LOOM_ROOT"

case "${1:-}" in
  "") ;;
  finetune)
    # ---- `scripts/demo.sh finetune`: owned by the fine-tune job (scripts/finetune.sh).
    [[ -f scripts/finetune.sh ]] || die "demo: scripts/finetune.sh is not there yet"
    exec bash scripts/finetune.sh "${@:2}"
    ;;
  *) die "demo: unknown job '$1' (use: scripts/demo.sh [finetune])" ;;
esac

build_dir="${LOOM_BUILD_DIR:-build}"
out_dir="${LOOM_DEMO_OUT:-out/gpt2_austen}"
steps="${LOOM_DEMO_STEPS:-160}"
eval_steps="${LOOM_DEMO_EVAL_STEPS:-$((steps / 4))}"
eval_samples="${LOOM_DEMO_EVAL_SAMPLES:-128}"
loom="$build_dir/loom"

phase setup bash scripts/setup.sh
# Same configuration as scripts/test.sh, so the two share build/ without
# reconfiguring; only the CLI target is built here.
build() {
  configure "$build_dir" -DCMAKE_BUILD_TYPE=Release -DLOOM_BUILD_BENCH=ON -DLOOM_SANITIZE=OFF \
    -DLOOM_UNITY_BUILD=ON >/dev/null || return $?
  cmake --build "$build_dir" -j"$LOOM_JOBS" --target loom_cli
}
phase build build
"$loom" --version

# run_clm takes one --train_file: the five novels, one after another.
mkdir -p "$out_dir"
corpus="$out_dir/austen.txt"
cat assets/corpora/austen/{emma,mansfieldpark,northangerabbey,prideprejudice,sensesensibility}.txt \
  >"$corpus"

# 160 steps x 8 blocks x 128 tokens = 164k tokens (a fifth of the 790k
# training tokens), 4 evaluations. Evaluation: the first 128 blocks of the
# held-back tenth in batches of 16 (no smaller last batch, so one evaluation
# graph); with the training-step graph that makes 2 compiles. A step costs
# about 4 CPU seconds (mostly the 50257-wide LM head), so the defaults fit in
# 15 minutes on 2 cores.
train() {
  "$loom" train \
    --task causal-lm --model_type gpt2 \
    --config_overrides "n_layer=4,n_embd=256,n_head=4,n_positions=128,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0" \
    --tokenizer_name assets/tokenizers/gpt2 \
    --train_file "$corpus" --validation_split_percentage 10 --block_size 128 \
    --max_eval_samples "$eval_samples" \
    --output_dir "$out_dir" --overwrite_output_dir \
    --device lazy --seed 42 \
    --per_device_train_batch_size 8 --per_device_eval_batch_size 16 \
    --learning_rate 1e-3 --weight_decay 0.01 --warmup_steps 20 --lr_scheduler_type cosine \
    --max_steps "$steps" --logging_steps 20 \
    --eval_strategy steps --eval_steps "$eval_steps" \
    --save_strategy steps --save_steps "$steps" --save_total_limit 1 \
    --disable_tqdm
}
phase train train

# The evaluations of trainer_state.json, and the compile counters.
check() {
  python3 - "$out_dir" <<'EOF'
import json, sys
out = sys.argv[1]
state = json.load(open(f"{out}/trainer_state.json"))
evals = [(e["step"], e["eval_perplexity"]) for e in state["log_history"] if "eval_perplexity" in e]
counters = json.load(open(f"{out}/lazy_metrics.json"))["counters"]
compiles = counters.get("UncachedCompile", 0)
import glob, os
events = glob.glob(f"{out}/runs/*/events.out.tfevents.*")
curves = os.path.exists(f"{out}/training_curves.svg")
print("perplexity at each evaluation:")
for step, ppl in evals:
    print(f"  step {step:>5}: {ppl:10.2f}")
print(f"UncachedCompile (train + eval): {compiles}")
falling = all(b < a for (_, a), (_, b) in zip(evals, evals[1:]))
print(f"TensorBoard event files: {len(events)} in {out}/runs; training_curves.svg: {'yes' if curves else 'MISSING'}")
ok = len(evals) >= 2 and falling and compiles <= 3 and events and curves
if not falling:
    print("FAIL: the perplexity did not fall at every evaluation")
if compiles > 3:
    print("FAIL: more than 3 graphs compiled")
if not events or not curves:
    print("FAIL: no TensorBoard event files or no training_curves.svg")
sys.exit(0 if ok else 1)
EOF
}
phase check check

sample() {
  if ! "$loom" generate --help >/dev/null 2>&1; then
    log "demo: this loom has no 'generate' subcommand yet; skipping the sample"
    return 0
  fi
  "$loom" generate --model_name_or_path "$out_dir" --device lazy \
    --prompt "It is a truth universally acknowledged, that" \
    --max_new_tokens 60 --do_sample --temperature 0.8 --top_k 40 --seed 42
}
phase generate sample

log "demo: model, checkpoint, trainer_state.json, lazy_metrics.json and training_curves.svg are in $out_dir"
log "demo: see the run with: tensorboard --logdir $out_dir/runs   (metrics: $loom inspect $out_dir)"
print_phases
