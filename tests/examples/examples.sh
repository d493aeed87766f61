#!/usr/bin/env bash
# tests/examples/examples.sh CASE BUILD_DIR SOURCE_DIR WORK_DIR: the CTests of
# examples/ (CMakeLists.txt), each on tiny inputs, so each takes seconds.
#   setup          tiny pretrained models made with `loom train` (1 step):
#                  GPT-2, Llama (GPT-2's tokenizer) and BERT (bert-base-uncased's
#                  tokenizer), a 300-line corpus and a 2-class sentence table
#   train_loop     example_train_loop_lazy (its own checks: loss and checkpoint)
#   finetune_gpt2  example_finetune_gpt2, then `loom plot` / `loom inspect` on its output
#   finetune_bert  example_finetune_sentiment on the tiny BERT, then plot / inspect
#   lora_llama     example_lora_llama (its own check: the reloaded adapter's logits)
#   generate       example_generate_sampling on the tiny GPT-2
#   train_gpt2_austen  example_train_gpt2_austen, 2 steps, 32 eval blocks (run
#                  from the source tree, where its corpus and tokenizer are)
#   train_rows     example_train_rows (its own check: the loss falls; rows in memory)
#   ddp            example_ddp_train under `mpirun -np 2` (exit 77, skipped,
#                  without mpirun or without MPI in loom)
# Every case but setup needs setup's WORK_DIR (CTest fixture). Prints what
# the commands print; exits non-zero on the first failure.
set -euo pipefail
case_name=$1 build=$2 src=$3 work=$4
loom="$build/loom"
models="$work/models"
corpus="$work/corpus.txt"

# expect REGEX FILE: FILE's text must match REGEX (extended).
expect() {
  grep -Eq -- "$1" "$2" || { echo "examples.sh: '$1' not in the output of $case_name" >&2; exit 1; }
}

# trainer_outputs DIR: the files `loom train` writes, and the tools that read them.
trainer_outputs() {
  local f
  for f in config.json model.safetensors trainer_state.json train_results.json \
    eval_results.json all_results.json lazy_metrics.json; do
    [[ -s "$1/$f" ]] || { echo "examples.sh: $1/$f missing" >&2; exit 1; }
  done
  ls "$1"/runs/*/events.out.tfevents.* >/dev/null
  "$loom" plot "$1" --no_png | tee "$work/$case_name.plot.txt"
  [[ -s "$1/training_curves.svg" ]]
  "$loom" inspect "$1" | tee "$work/$case_name.inspect.txt"
  expect "UncachedCompile" "$work/$case_name.inspect.txt"
}

run_setup() {
  rm -rf "$work"
  mkdir -p "$models"
  head -n 300 "$src/assets/corpora/austen/prideprejudice.txt" >"$corpus"
  local common=(--train_file "$corpus" --max_train_samples 8 --max_steps 1 --report_to none
    --save_strategy no --disable_tqdm --overwrite_output_dir)
  "$loom" train --model_type gpt2 --config_overrides n_layer=1,n_embd=16,n_head=2,n_positions=64 \
    --tokenizer_name "$src/assets/tokenizers/gpt2" --block_size 32 --output_dir "$models/gpt2" \
    "${common[@]}"
  "$loom" train --model_type llama --config_overrides \
    num_hidden_layers=1,hidden_size=16,intermediate_size=32,num_attention_heads=4,num_key_value_heads=2,max_position_embeddings=64 \
    --tokenizer_name "$src/assets/tokenizers/gpt2" --block_size 32 --output_dir "$models/llama" \
    "${common[@]}"
  "$loom" train --model_type bert --task masked-lm --config_overrides \
    num_hidden_layers=1,hidden_size=16,intermediate_size=32,num_attention_heads=2,max_position_embeddings=64 \
    --tokenizer_name "$src/assets/tokenizers/bert-base-uncased" --max_seq_length 32 \
    --output_dir "$models/bert" "${common[@]}"
  mkdir -p "$work/sentiment"
  local split
  for split in train eval; do
    {
      echo "sentence,label"
      for i in 1 2 3 4 5 6 7 8; do
        echo "a wonderful and moving film number $i,1"
        echo "a dull and tiresome film number $i,0"
      done
    } >"$work/sentiment/$split.csv"
  done
}

log="$work/$case_name.log"
case $case_name in
  setup) run_setup ;;
  train_loop)
    "$build/example_train_loop_lazy" 150 "$work/train_loop" | tee "$log"
    expect "checkpoint ok" "$log"
    expect "graphs compiled: 1$" "$log"
    ;;
  finetune_gpt2)
    "$build/example_finetune_gpt2" "$models/gpt2" "$corpus" "$work/finetune_gpt2" 6 32 | tee "$log"
    expect "eval perplexity: [0-9.]+ before, [0-9.]+ after 6 steps" "$log"
    # Fine-tuning lowers the held-out perplexity, even in 6 steps.
    awk '/eval perplexity:/ { exit !($5 < $3) }' "$log" ||
      { echo "examples.sh: the perplexity did not fall" >&2; exit 1; }
    trainer_outputs "$work/finetune_gpt2"
    ;;
  train_rows)
    "$build/example_train_rows" "$src/assets/tokenizers" "$work/train_rows" 12 | tee "$log"
    expect "causal-lm on 64 texts in memory: loss [0-9.]+ at the first step" "$log"
    expect "text-classification on 32 JSON rows: eval accuracy [0-9.]+" "$log"
    ;;
  finetune_bert)
    "$build/example_finetune_sentiment" "$models/bert" "$work/sentiment" \
      "$work/finetune_bert" 1 | tee "$log"
    expect "accuracy after fine-tuning: +[0-9.]+" "$log"
    trainer_outputs "$work/finetune_bert"
    ;;
  lora_llama)
    "$build/example_lora_llama" "$models/llama" "$corpus" "$work/lora_llama" 4 16 | tee "$log"
    expect "trainable params: [0-9]+ \|\| all params" "$log"
    expect "adapter reloaded: PeftModelForCausalLM" "$log"
    [[ -s "$work/lora_llama/adapter_config.json" && -s "$work/lora_llama/adapter_model.safetensors" ]]
    ;;
  train_gpt2_austen)
    (cd "$src" && "$build/example_train_gpt2_austen" 2 "$work/train_gpt2_austen" 32) | tee "$log"
    expect "train: [0-9]+ blocks, eval: 32 blocks of 128 tokens" "$log"
    expect "eval perplexity after 2 steps: [0-9.]+" "$log"
    expect "^sample: Emma was" "$log"
    [[ -s "$work/train_gpt2_austen/model.safetensors" ]]
    ;;
  generate)
    "$build/example_generate_sampling" "$models/gpt2" "It is a truth" 8 | tee "$log"
    expect "same seed, same text: ok" "$log"
    ;;
  ddp)
    "$src/tests/distributed/mpi_case.sh" zero 120 \
      "rank 1 of 2: train_loss [0-9.]+, weight checksum" \
      2 "$build/example_ddp_train" "$models/gpt2" "$corpus" "$work/ddp" 4
    ;;
  *)
    echo "examples.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac
