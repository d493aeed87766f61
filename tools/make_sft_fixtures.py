#!/usr/bin/env python3
"""Writes tests/fixtures/sft/: what TRL's SFTTrainer makes of small datasets in each of its
schemas, for loom's `--task sft` data path (src/data/sft/, src/train/training_job/job_sft.cpp)
to match exactly.

For every case: the rows (<case>.jsonl, the file loom reads), the SFTConfig fields set, the
chat template (a file of ../shared/data/chat_templates or tests/fixtures/sft/), and the
`input_ids` and `labels` of SFTTrainer's prepared train_dataset (after add_eos, tokenize_fn,
build_labels, the keep_start truncation and the drop of rows without a label token) -> cases.json.
The tokenizer is the real Qwen2/Qwen3 one (../shared/data/tokenizers/qwen2/tokenizer.json)
with tests/fixtures/sft/qwen2_tokenizer_config.json's special tokens (Qwen3's: eos <|im_end|>,
pad <|endoftext|>). The model handed to SFTTrainer is a tiny random Qwen3 (its weights do not
change the prepared data).

Usage (torch CPU, trl, transformers, datasets):
  python3 -m venv /tmp/trlvenv
  /tmp/trlvenv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
  /tmp/trlvenv/bin/pip install trl transformers datasets
  /tmp/trlvenv/bin/python tools/make_sft_fixtures.py
Written with trl 1.16.0, transformers 5.24.0.
"""
import json
import os
import shutil
import tempfile

import transformers
import trl
from datasets import Dataset
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM
from trl import SFTConfig, SFTTrainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared", "data")
if not os.path.isdir(SHARED):
    SHARED = "/work/shared/data"
OUT = os.path.join(ROOT, "tests", "fixtures", "sft")

SYSTEM = {"role": "system", "content": "You are a terse assistant."}

TEXT_ROWS = [
    {"text": "The quick brown fox jumps over the lazy dog."},
    {"text": "Hello world<|im_end|>"},  # already ends with EOS: not appended again
    {"text": "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich. 12345 !!"},
]

MESSAGES_ROWS = [
    {"messages": [SYSTEM, {"role": "user", "content": "What is 2+2?"},
                  {"role": "assistant", "content": "4."}]},
    {"messages": [{"role": "user", "content": "Name a colour."},
                  {"role": "assistant", "content": "Blue."},
                  {"role": "user", "content": "Another one?"},
                  {"role": "assistant", "content": "Green, or maybe red."}]},
    {"messages": [{"role": "user", "content": "Say nothing."}, {"role": "assistant", "content": ""}]},
]

PROMPT_COMPLETION_ROWS = [
    {"prompt": "The capital of France is", "completion": " Paris."},
    {"prompt": "1, 2, 3,", "completion": " 4, 5<|im_end|>"},
    {"prompt": "Translate 'cat' to German:", "completion": " Katze"},
]

CONV_PROMPT_COMPLETION_ROWS = [
    {"prompt": [SYSTEM, {"role": "user", "content": "What is the capital of France?"}],
     "completion": [{"role": "assistant", "content": "Paris."}]},
    {"prompt": [{"role": "user", "content": "Count to three."}],
     "completion": [{"role": "assistant", "content": "One, two, three."}]},
]

TOOLS = json.dumps([{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}])
TOOL_ROWS = [
    {"messages": [{"role": "user", "content": "Weather in Paris?"},
                  {"role": "assistant", "content": "Sunny, 21 C."}], "tools": TOOLS},
]

QWEN3 = "shared:Qwen-Qwen3-0.6B.jinja"
QWEN25 = "shared:Qwen-Qwen2.5-7B-Instruct.jinja"
CHATML_GEN = "fixture:chatml_generation.jinja"

# name -> (rows, template, SFTConfig fields)
CASES = {
    "text": (TEXT_ROWS, None, {}),
    "text_max_length_6": (TEXT_ROWS, None, {"max_length": 6}),
    "text_no_truncation": (TEXT_ROWS, None, {"max_length": None}),
    "messages_qwen3": (MESSAGES_ROWS, QWEN3, {}),
    "messages_qwen25": (MESSAGES_ROWS, QWEN25, {}),
    "messages_qwen3_max_length_20": (MESSAGES_ROWS, QWEN3, {"max_length": 20}),
    "messages_tools_qwen3": (TOOL_ROWS, QWEN3, {}),
    "messages_assistant_only": (MESSAGES_ROWS[:2], CHATML_GEN, {"assistant_only_loss": True}),
    "prompt_completion": (PROMPT_COMPLETION_ROWS, None, {}),
    "prompt_completion_full_loss": (PROMPT_COMPLETION_ROWS, None, {"completion_only_loss": False}),
    "prompt_completion_max_length_6": (PROMPT_COMPLETION_ROWS, None, {"max_length": 6}),
    "conv_prompt_completion_qwen3": (CONV_PROMPT_COMPLETION_ROWS, QWEN3, {}),
    "conv_prompt_completion_qwen25": (CONV_PROMPT_COMPLETION_ROWS, QWEN25, {}),
    "conv_prompt_completion_assistant_only": (
        CONV_PROMPT_COMPLETION_ROWS, CHATML_GEN, {"assistant_only_loss": True}),
}


def template_path(spec):
    kind, name = spec.split(":", 1)
    return os.path.join(SHARED, "chat_templates", name) if kind == "shared" else os.path.join(OUT, name)


def tokenizer_dir(tmp):
    d = os.path.join(tmp, "tok")
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(SHARED, "tokenizers", "qwen2", "tokenizer.json"), d)
    shutil.copy(os.path.join(OUT, "qwen2_tokenizer_config.json"),
                os.path.join(d, "tokenizer_config.json"))
    return d


def tiny_model(vocab):
    config = Qwen3Config(vocab_size=vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                         max_position_embeddings=4096)
    return Qwen3ForCausalLM(config)


def prepare(tok_dir, model, rows, template, fields, tmp):
    tok = AutoTokenizer.from_pretrained(tok_dir)
    args = dict(output_dir=os.path.join(tmp, "out"), report_to=[], dataset_num_proc=None, use_cpu=True, bf16=False)
    if template is not None:
        args["chat_template_path"] = template_path(template)
    args.update(fields)
    trainer = SFTTrainer(model=model, args=SFTConfig(**args), train_dataset=Dataset.from_list(rows),
                         processing_class=tok)
    ds = trainer.train_dataset
    return [list(map(int, r)) for r in ds["input_ids"]], [list(map(int, r)) for r in ds["labels"]]


def main():
    os.makedirs(OUT, exist_ok=True)
    out = {"trl": trl.__version__, "transformers": transformers.__version__, "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tok_dir = tokenizer_dir(tmp)
        model = tiny_model(len(AutoTokenizer.from_pretrained(tok_dir)))
        for name, (rows, template, fields) in CASES.items():
            with open(os.path.join(OUT, name + ".jsonl"), "w", encoding="utf-8") as f:
                for r in rows:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
            ids, labels = prepare(tok_dir, model, rows, template, fields, tmp)
            out["cases"][name] = {"rows": name + ".jsonl", "template": template or "",
                                  "config": fields, "input_ids": ids, "labels": labels}
            print(name, [len(x) for x in ids])
    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


LOSS_QA = [("hi there", "hello to you"), ("what is two plus two", "four"),
           ("name a colour", "blue, or maybe a long green"), ("say yes", "yes"),
           ("count to three", "one two three"), ("a fruit?", "an apple"),
           ("the sky is", "blue"), ("bye", "goodbye and good luck")]


def loss_fixture():
    """tiny_qwen3/ (a random Qwen3 with the tiny Qwen2-style tokenizer) and trl_losses.json: the
    losses of TRL's SFTTrainer for 12 steps on 8 conversations, all of them in every batch (so
    the sampler's order cannot matter), assistant-only loss, dropout 0, unpacked, AdamW lr 1e-2
    with the linear schedule, max_grad_norm 1."""
    import torch
    model_dir = os.path.join(OUT, "tiny_qwen3")
    os.makedirs(model_dir, exist_ok=True)
    tok_src = os.path.join(ROOT, "tests", "fixtures", "tokenizers", "qwen2", "tokenizer.json")
    shutil.copy(tok_src, model_dir)
    shutil.copy(os.path.join(OUT, "qwen2_tokenizer_config.json"),
                os.path.join(model_dir, "tokenizer_config.json"))
    tok = AutoTokenizer.from_pretrained(model_dir)
    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=8, max_position_embeddings=64, tie_word_embeddings=False,
                         attention_dropout=0.0)
    model = Qwen3ForCausalLM(config)
    model.save_pretrained(model_dir)
    rows = [{"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}
            for q, a in LOSS_QA]
    with open(os.path.join(OUT, "loss_rows.jsonl"), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        args = SFTConfig(output_dir=tmp, report_to=[], use_cpu=True, bf16=False, max_steps=12,
                         per_device_train_batch_size=8, learning_rate=1e-2, logging_steps=1,
                         save_strategy="no", assistant_only_loss=True, max_length=64, seed=42,
                         chat_template_path=os.path.join(OUT, "chatml_generation.jinja"))
        trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                             processing_class=tok)
        trainer.train()
        losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    with open(os.path.join(OUT, "trl_losses.json"), "w", encoding="utf-8") as f:
        json.dump({"trl": trl.__version__, "steps": 12, "per_device_train_batch_size": 8,
                   "learning_rate": 1e-2, "assistant_only_loss": True, "max_length": 64,
                   "losses": losses}, f, indent=1)
        f.write("\n")
    print("losses", losses)


if __name__ == "__main__":
    main()
    loss_fixture()
