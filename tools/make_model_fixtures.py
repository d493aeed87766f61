#!/usr/bin/env python3
"""Writes the golden model fixtures under tests/fixtures/models/, read by
tests/nn/*_test.cpp: tiny random GPT-2 and BERT models saved with Hugging Face
transformers' save_pretrained, plus what transformers computes with them.

Assumes PyPI torch and transformers (`pip install torch transformers`; CPU is
enough). Runs single-threaded with fixed seeds, so a given torch/transformers
version writes the same numbers every time.

  python3 tools/make_model_fixtures.py          # (re)writes tests/fixtures/models/

Directories written (each a save_pretrained output plus golden.safetensors):
  gpt2/          GPT2LMHeadModel, 2 layers, n_embd 32, 4 heads, vocab 96, n_positions 64
  gpt2_sharded/  the same weights saved with max_shard_size="50KB" (3 shards +
                 model.safetensors.index.json), to test reading transformers' shards
  bert/          BertForMaskedLM, 2 layers, hidden 32, 4 heads, intermediate 64, vocab 96
  bert_seqcls/   BertForSequenceClassification, same sizes, num_labels 3 (id2label
                 set, problem_type single_label_classification)

layers.safetensors: single torch.nn layers for tests/nn/layers_test.cpp. For
  each layer <L>: <L>.x (input), <L>.<param> (its parameters), <L>.out,
  <L>.R (random, shaped like out) and <L>.grad.x / <L>.grad.<param>, the
  gradients of sum(out * R). Layers: linear (Linear 6->5), layer_norm
  (LayerNorm(6), eps 1e-5), embedding (Embedding(10, 4, padding_idx=2), ids
  holding the pad id), gelu / gelu_tanh, mha (MultiheadAttention(8, 2,
  batch_first) with a key_padding_mask <L>.mask, true = ignore).

golden.safetensors (one per model directory but gpt2_sharded) holds:
  input_ids [B,T] i64, attention_mask [B,T] i64 (right padding in row 1),
  token_type_ids [B,T] i64 (BERT only), labels (i64; [B,T] with -100 for
  ignored tokens, or [B] for sequence classification),
  logits, loss []                 model(**inputs) in eval mode (dropout off)
  grad.<name>                     d loss / d parameter for every entry of
                                  named_parameters() (tied weights once, under
                                  the name named_parameters() keeps)
  train.loss [10], train.grad_norm [10], train.lr [10]
                                  ten steps on the same batch, eval mode (no
                                  dropout): loss = model(**inputs).loss;
                                  backward; grad_norm = clip_grad_norm_(1.0);
                                  AdamW step (Trainer-style groups: no weight
                                  decay on biases and LayerNorm weights);
                                  linear warm-up schedule step; zero_grad.
                                  train.loss[i] is the loss before step i,
                                  train.lr[i] the learning rate step i used.
  __metadata__["golden"]          JSON: versions, the AdamW hyperparameters,
                                  the warm-up/total steps and the no-decay names.
"""
import json
import pathlib
import shutil

import torch
from safetensors.torch import save_file
from transformers import (BertConfig, BertForMaskedLM, BertForSequenceClassification,
                          GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup)
import transformers

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "models"

B, T, VOCAB = 2, 8, 96
PAD = 3  # padded tokens at the end of row 1
ADAMW = {"lr": 5e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}
WARMUP, STEPS, MAX_NORM = 3, 10, 1.0


def inputs_for(kind):
    """Fixed inputs: two rows, the second right-padded with PAD tokens."""
    g = torch.Generator().manual_seed(1234)
    ids = torch.randint(4, VOCAB, (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.long)
    mask[1, T - PAD:] = 0
    ids[1, T - PAD:] = 0  # the pad id; masked anyway
    out = {"input_ids": ids, "attention_mask": mask}
    if kind == "gpt2":
        labels = ids.clone()
        labels[mask == 0] = -100
    elif kind == "bert":
        out["token_type_ids"] = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0, 0]])
        labels = torch.full((B, T), -100)
        for r, c in [(0, 1), (0, 5), (0, 6), (1, 0), (1, 3)]:
            labels[r, c] = ids[r, c]
            out["input_ids"][r, c] = 1  # the [MASK] id of this tiny vocabulary
    else:  # bert_seqcls
        out["token_type_ids"] = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0, 0]])
        labels = torch.tensor([2, 0])
    out["labels"] = labels
    return out


def make_model(kind):
    torch.manual_seed({"gpt2": 1, "bert": 2, "bert_seqcls": 3}[kind])
    if kind == "gpt2":
        cfg = GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB, n_positions=64,
                         bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)
        model = GPT2LMHeadModel(cfg)
    elif kind == "bert":
        cfg = BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                         intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=64)
        model = BertForMaskedLM(cfg)
    else:
        cfg = BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                         intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=64,
                         id2label={0: "negative", 1: "neutral", 2: "positive"},
                         label2id={"negative": 0, "neutral": 1, "positive": 2},
                         problem_type="single_label_classification")
        model = BertForSequenceClassification(cfg)
    # Random (not zero/one) biases and LayerNorm weights, so a bias that loom
    # dropped or misplaced shows up in the logits.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "ln_" in name or "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    return model


def no_decay_names(model):
    """Trainer.get_decay_parameter_names: no decay on biases and LayerNorm weights."""
    ln = {n for n, m in model.named_modules() if isinstance(m, torch.nn.LayerNorm)}
    out = []
    for name, _ in model.named_parameters():
        module = name.rsplit(".", 1)[0]
        if "bias" in name or module in ln:
            out.append(name)
    return out


def golden(kind, model, inputs):
    model.eval()  # dropout off; gradients still flow
    tensors = {k: v.contiguous() for k, v in inputs.items()}
    out = model(**inputs)
    out.loss.backward()
    tensors["logits"] = out.logits.detach().contiguous()
    tensors["loss"] = out.loss.detach().reshape([])
    for name, p in model.named_parameters():
        tensors["grad." + name] = p.grad.detach().contiguous()
    model.zero_grad()

    nd = set(no_decay_names(model))
    params = list(model.named_parameters())
    groups = [
        {"params": [p for n, p in params if n not in nd], "weight_decay": ADAMW["weight_decay"]},
        {"params": [p for n, p in params if n in nd], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=ADAMW["lr"], betas=tuple(ADAMW["betas"]), eps=ADAMW["eps"])
    sched = get_linear_schedule_with_warmup(opt, WARMUP, STEPS)
    losses, norms, lrs = [], [], []
    for _ in range(STEPS):
        loss = model(**inputs).loss
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item())
        norms.append(norm.item())
    tensors["train.loss"] = torch.tensor(losses, dtype=torch.float32)
    tensors["train.grad_norm"] = torch.tensor(norms, dtype=torch.float32)
    tensors["train.lr"] = torch.tensor(lrs, dtype=torch.float32)
    meta = {
        "torch": torch.__version__, "transformers": transformers.__version__,
        "mode": "eval", "adamw": ADAMW, "warmup_steps": WARMUP, "total_steps": STEPS,
        "max_grad_norm": MAX_NORM, "no_decay": sorted(nd),
        "losses": losses,
    }
    return tensors, meta


def layer_fixtures():
    """Single torch.nn layers: inputs, parameters, outputs, grads of sum(out * R)."""
    torch.manual_seed(7)
    t = {}

    def record(name, module, x, out, extra=()):
        r = torch.randn_like(out)
        (out * r).sum().backward()
        t[f"{name}.x"] = x.detach().clone()
        if x.grad is not None:
            t[f"{name}.grad.x"] = x.grad.clone()
        t[f"{name}.out"] = out.detach().clone()
        t[f"{name}.R"] = r
        for pname, p in (module.named_parameters() if module is not None else []):
            t[f"{name}.{pname}"] = p.detach().clone()
            t[f"{name}.grad.{pname}"] = p.grad.clone()
        for k, v in extra:
            t[f"{name}.{k}"] = v

    lin = torch.nn.Linear(6, 5)
    x = torch.randn(2, 3, 6, requires_grad=True)
    record("linear", lin, x, lin(x))
    ln = torch.nn.LayerNorm(6)
    with torch.no_grad():
        ln.weight.add_(torch.randn(6) * 0.3)
        ln.bias.add_(torch.randn(6) * 0.3)
    x = torch.randn(2, 3, 6, requires_grad=True)
    record("layer_norm", ln, x, ln(x))
    emb = torch.nn.Embedding(10, 4, padding_idx=2)
    with torch.no_grad():
        emb.weight[2] = torch.randn(4)  # a non-zero pad row: forward reads it, backward skips it
    ids = torch.tensor([[1, 2, 3], [2, 9, 0]])
    out = emb(ids)
    r = torch.randn_like(out)
    (out * r).sum().backward()
    t.update({"embedding.ids": ids, "embedding.weight": emb.weight.detach().clone(),
              "embedding.out": out.detach().clone(), "embedding.R": r,
              "embedding.grad.weight": emb.weight.grad.clone()})
    for name, approx in [("gelu", "none"), ("gelu_tanh", "tanh")]:
        x = (torch.randn(3, 7) * 3).requires_grad_()
        record(name, None, x, torch.nn.functional.gelu(x, approximate=approx))
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    with torch.no_grad():
        mha.in_proj_bias.add_(torch.randn(24) * 0.1)
        mha.out_proj.bias.add_(torch.randn(8) * 0.1)
    x = torch.randn(2, 5, 8, requires_grad=True)
    mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
    out, _ = mha(x, x, x, key_padding_mask=mask, need_weights=False)
    record("mha", mha, x, out, extra=[("mask", mask)])
    save_file({k: v.contiguous() for k, v in t.items()}, OUT / "layers.safetensors",
              metadata={"torch": torch.__version__})


def main():
    torch.set_num_threads(1)
    if OUT.exists():
        for kind in ["gpt2", "gpt2_sharded", "bert", "bert_seqcls"]:
            shutil.rmtree(OUT / kind, ignore_errors=True)
    OUT.mkdir(parents=True, exist_ok=True)
    for kind in ["gpt2", "bert", "bert_seqcls"]:
        model = make_model(kind)
        model.config._attn_implementation = "eager"
        model.save_pretrained(OUT / kind)
        if kind == "gpt2":
            model.save_pretrained(OUT / "gpt2_sharded", max_shard_size="50KB")
        tensors, meta = golden(kind, model, inputs_for(kind))
        save_file(tensors, OUT / kind / "golden.safetensors",
                  metadata={"golden": json.dumps(meta, sort_keys=True)})
        print(f"{kind}: loss {tensors['loss'].item():.6f}, ten-step losses "
              f"{meta['losses'][0]:.4f} .. {meta['losses'][-1]:.4f}")
    layer_fixtures()
    total = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file())
    print(f"tests/fixtures/models: {total} bytes")


if __name__ == "__main__":
    main()
