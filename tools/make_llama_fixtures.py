#!/usr/bin/env python3
"""Writes the Llama-family golden fixtures under tests/fixtures/models/, read
by tests/nn/golden_test.cpp, ten_steps_test.cpp and llama_test.cpp: tiny random
LlamaForCausalLM, Qwen2ForCausalLM and Qwen3ForCausalLM checkpoints saved with
transformers' save_pretrained, plus what transformers computes with them.

Reuses tools/make_model_fixtures.py's inputs, AdamW loop and golden layout
(logits, loss, grad.<name>, train.loss/grad_norm/lr, metadata["golden"]), so
the same C++ tests run over these models. Assumes PyPI torch and
transformers (CPU is enough); single-threaded, fixed seeds.

  python3 tools/make_llama_fixtures.py             # (re)writes tests/fixtures/models/{llama,qwen2,qwen3}
  python3 tools/make_llama_fixtures.py qwen3       # only the named ones

Directories written:
  llama/  LlamaForCausalLM: 2 layers, hidden 32, 4 heads, 2 key/value heads
          (grouped-query attention), head_dim 8, intermediate 64, vocab 96,
          untied lm_head, rope_theta 1e4 with rope_scaling "llama3" (factor 8,
          low/high_freq_factor 1/4, original_max_position_embeddings 16, so
          the head's frequencies fall in all three llama3 bands)
  qwen2/  Qwen2ForCausalLM: same sizes, 1 key/value head (multi-query), q/k/v
          biases, tied embeddings, rope_theta 1e6 with rope_scaling "linear" 2
  qwen3/  Qwen3ForCausalLM: hidden 64, 4 heads of head_dim 32 (not 64 / 4), 2
          key/value heads, intermediate 64, vocab 128, q_norm/k_norm per head,
          no biases, untied lm_head, rope_theta 1e6 (default rope)
golden.safetensors adds, besides make_model_fixtures.py's tensors:
  generate.prompt [1,5] i64, generate.greedy [1,15] i64: model.generate(
  prompt, max_new_tokens=10, do_sample=False) with no eos (greedy ids).
"""
import pathlib
import shutil
import json
import sys

import torch
from safetensors.torch import save_file
from transformers import (LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM,
                          Qwen3Config, Qwen3ForCausalLM)

import make_model_fixtures as base

OUT = base.OUT
SIZES = dict(vocab_size=base.VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=4, max_position_embeddings=64, bos_token_id=None,
             eos_token_id=None, pad_token_id=None)


def make_model(kind):
    torch.manual_seed({"llama": 11, "qwen2": 12, "qwen3": 13}[kind])
    if kind == "llama":
        cfg = LlamaConfig(num_key_value_heads=2, tie_word_embeddings=False, rope_theta=10000.0,
                          rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                        "original_max_position_embeddings": 16}, **SIZES)
        model = LlamaForCausalLM(cfg)
    elif kind == "qwen3":
        sizes = dict(SIZES, hidden_size=64, vocab_size=128)
        cfg = Qwen3Config(num_key_value_heads=2, head_dim=32, attention_bias=False,
                          tie_word_embeddings=False, rope_theta=1e6, **sizes)
        model = Qwen3ForCausalLM(cfg)
    else:
        cfg = Qwen2Config(num_key_value_heads=1, tie_word_embeddings=True, rope_theta=1e6,
                          rope_scaling={"rope_type": "linear", "factor": 2.0}, **SIZES)
        model = Qwen2ForCausalLM(cfg)
    # Random (not one/zero) norm weights and biases: a misplaced one shows.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    return model


def no_decay_names(model):
    """The Trainer's rule for these names: biases and RMSNorm weights."""
    return [n for n, _ in model.named_parameters() if "bias" in n or "norm" in n.lower()]


def main():
    torch.set_num_threads(1)
    base.no_decay_names = no_decay_names
    for kind in sys.argv[1:] or ["llama", "qwen2", "qwen3"]:
        shutil.rmtree(OUT / kind, ignore_errors=True)
        model = make_model(kind)
        model.config._attn_implementation = "eager"
        model.save_pretrained(OUT / kind)
        (OUT / kind / "generation_config.json").unlink(missing_ok=True)
        model.eval()
        prompt = torch.tensor([[5, 17, 42, 8, 77]])
        with torch.no_grad():
            greedy = model.generate(prompt, attention_mask=torch.ones_like(prompt),
                                    max_new_tokens=10, do_sample=False, eos_token_id=None,
                                    pad_token_id=0)
        tensors, meta = base.golden("gpt2", model, base.inputs_for("gpt2"))
        tensors["generate.prompt"] = prompt
        tensors["generate.greedy"] = greedy.contiguous()
        save_file(tensors, OUT / kind / "golden.safetensors",
                  metadata={"golden": json.dumps(meta, sort_keys=True)})
        print(f"{kind}: loss {tensors['loss'].item():.6f}, ten-step losses "
              f"{meta['losses'][0]:.4f} .. {meta['losses'][-1]:.4f}, greedy {greedy.tolist()}")


if __name__ == "__main__":
    main()
