#!/usr/bin/env python3
"""TRL's SFTTrainer peer of bench/sft_trl.sh: `make MODEL_DIR` writes the random Qwen3-shaped
model both sides train (transformers' Qwen3ForCausalLM, seed 0, the real Qwen2 tokenizer);
`train MODEL_DIR DATA.jsonl OUT STEPS BATCH MAX_LENGTH THREADS` runs SFTTrainer (full
fine-tuning, unpacked, dropout 0, fp32, AdamW, the same steps as loom) and prints one JSON line:
train_runtime, train_samples_per_second and the logged losses.

Needs torch (CPU), transformers, trl, datasets (e.g. /tmp/trlvenv of tools/make_sft_fixtures.py).
"""
import json
import os
import shutil
import sys
import tempfile


def make(model_dir, tokenizer_json, tokenizer_config, layers, hidden):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM
    torch.manual_seed(0)
    cfg = Qwen3Config(vocab_size=151936, hidden_size=hidden, intermediate_size=3 * hidden,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      head_dim=hidden // 4, max_position_embeddings=2048, attention_dropout=0.0,
                      tie_word_embeddings=False, eos_token_id=151645, pad_token_id=151643)
    Qwen3ForCausalLM(cfg).save_pretrained(model_dir)
    shutil.copy(tokenizer_json, os.path.join(model_dir, "tokenizer.json"))
    shutil.copy(tokenizer_config, os.path.join(model_dir, "tokenizer_config.json"))


def train(model_dir, data, out, steps, batch, max_length, threads):
    import torch
    torch.set_num_threads(threads)
    from datasets import Dataset
    from transformers import AutoTokenizer, Qwen3ForCausalLM
    from trl import SFTConfig, SFTTrainer
    with open(data, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = Qwen3ForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa")
    args = SFTConfig(output_dir=out, report_to=[], use_cpu=True, bf16=False, max_steps=steps,
                     per_device_train_batch_size=batch, max_length=max_length, learning_rate=1e-4,
                     logging_steps=1, save_strategy="no", seed=42, dataloader_num_workers=0)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                         processing_class=tok)
    m = trainer.train().metrics
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    print(json.dumps({"train_runtime": m["train_runtime"],
                      "train_samples_per_second": m["train_samples_per_second"],
                      "losses": losses}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    else:
        train(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]),
              int(sys.argv[7]), int(sys.argv[8]))
