#!/usr/bin/env python3
"""Writes tests/fixtures/generation/: a tiny GPT-2 (gpt2/, save_pretrained output) and
gpt2.json, what transformers' generate() does with it, read by
tests/nn/generation_reference_test.cpp.

The model is GPT-2 with 2 layers, n_embd 32, 4 heads, vocab 96, n_positions 64, randomly
initialised with torch.manual_seed(7) and initializer_range 0.2: with transformers' default
0.02 an untrained model's greedy output is one token repeated (tests/fixtures/models/gpt2
gives 22, 22, 22, ...), which cannot tell a wrong argmax from a right one; 0.2 makes the
greedy continuation change token at almost every step.

What it records:
  greedy    generate(do_sample=False) ids for a few prompts (eos 95 from the fixture's
            generation_config, so a row that reaches it is padded as transformers pads it).
  sampling  for each warper setting (temperature, top_k, top_p), the next-token
            probabilities after transformers' own logits processors, as generate()
            applies them (output_scores: the processed scores, softmaxed here), at every
            step of a sequence transformers sampled with torch.manual_seed(0). Sampled
            ids cannot be compared (loom's generator is not torch's), so the test compares
            these distributions and their supports (the top-k / top-p sets), and checks
            loom's own draws against them.

Assumes torch and transformers from PyPI (`pip install torch transformers`); CPU is enough;
torch runs single-threaded. Run: python3 tools/make_generation_fixtures.py
"""
import json
import pathlib

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "generation"

PROMPTS = [
    [[3, 17, 42, 8, 77], [5, 5, 60, 1, 90]],  # the prompt of generation_test.cpp
    [[94]],
    [[10, 20, 30, 40, 50, 60, 70, 80, 90, 11, 21, 31]],
]

SETTINGS = [
    dict(temperature=1.0, top_k=50, top_p=1.0),   # transformers' defaults
    dict(temperature=0.7, top_k=5, top_p=1.0),
    dict(temperature=1.3, top_k=0, top_p=0.8),
    dict(temperature=1.0, top_k=10, top_p=0.5),
]


def greedy_cases(model):
    cases = []
    for prompt in PROMPTS:
        ids = torch.tensor(prompt, dtype=torch.long)
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=24, pad_token_id=95)
        cases.append(dict(prompt=prompt, max_new_tokens=24, eos_token_id=95,
                          sequences=out.tolist()))
    return cases


def sampling_cases(model):
    cases = []
    for setting in SETTINGS:
        for prompt in PROMPTS[:2]:
            ids = torch.tensor(prompt, dtype=torch.long)
            torch.manual_seed(0)
            out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True,
                                 max_new_tokens=6, pad_token_id=95, eos_token_id=None,
                                 output_scores=True, return_dict_in_generate=True, **setting)
            steps = []
            for s, scores in enumerate(out.scores):  # [B, V] processed scores of step s
                probs = torch.softmax(scores.float(), dim=-1)
                steps.append(dict(prefix_length=len(prompt[0]) + s,
                                  probs=[[float(p) for p in row] for row in probs]))
            cases.append(dict(setting=setting, prompt=prompt, sequences=out.sequences.tolist(),
                              steps=steps))
    return cases


def main():
    torch.set_num_threads(1)
    torch.manual_seed(7)
    config = GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=96, n_positions=64,
                        bos_token_id=95, eos_token_id=95, initializer_range=0.2,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    GPT2LMHeadModel(config).save_pretrained(OUT / "gpt2")
    model = GPT2LMHeadModel.from_pretrained(OUT / "gpt2").eval()
    doc = dict(generator="tools/make_generation_fixtures.py", torch=torch.__version__,
               transformers=transformers.__version__, greedy=greedy_cases(model),
               sampling=sampling_cases(model))
    path = OUT / "gpt2.json"
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(path, path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
