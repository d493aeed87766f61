#!/usr/bin/env python3
"""Writes the LoRA fixtures under tests/fixtures/models/, read by
tests/nn/lora_golden_test.cpp: PEFT LoRA adapters (peft.get_peft_model +
save_pretrained) on the tiny Llama and GPT-2 checkpoints of
make_llama_fixtures.py / make_model_fixtures.py, with lora_B drawn nonzero
(PEFT initializes it to zeros, which would hide a wrong adapter), and what
PEFT + transformers compute with them.

Assumes PyPI torch, transformers and peft (`pip install peft`; CPU is
enough); single-threaded, fixed seeds.

  python3 tools/make_lora_fixtures.py   # (re)writes tests/fixtures/models/{llama,gpt2}_lora

Directories written (each: adapter_config.json, adapter_model.safetensors,
golden.safetensors):
  llama_lora/  r 4, lora_alpha 8 (scaling 2), targets q_proj, v_proj, down_proj
  gpt2_lora/   r 4, lora_alpha 16 (scaling 4), targets c_attn, c_proj (Conv1D:
               fan_in_fan_out True, attn.c_proj and mlp.c_proj both match)
golden.safetensors: input_ids, attention_mask, labels (make_model_fixtures'
inputs), logits, loss, grad.<PEFT adapter key> for every adapter weight, and
ten AdamW steps over the adapter weights only (train.loss, train.grad_norm,
train.lr; AdamW lr 5e-3, weight decay 0.01 on every adapter weight, clip 1.0,
linear schedule with 3 warm-up steps of 10), in eval mode (dropout off).
metadata["golden"] records the settings and peft's version.
"""
import json
import pathlib
import shutil

import peft
import torch
import transformers
from peft import LoraConfig, get_peft_model
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, get_linear_schedule_with_warmup

import make_model_fixtures as base

OUT = base.OUT
CASES = {
    "llama": dict(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], seed=21),
    "gpt2": dict(r=4, lora_alpha=16, target_modules=["c_attn", "c_proj"], seed=22),
}


def peft_key(name):
    """The key PEFT saves for a live parameter name (adapter name dropped)."""
    return name.replace(".default", "")


def golden(model, inputs):
    model.eval()
    tensors = {k: v.contiguous() for k, v in inputs.items()}
    out = model(**inputs)
    out.loss.backward()
    tensors["logits"] = out.logits.detach().contiguous()
    tensors["loss"] = out.loss.detach().reshape([])
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    for name, p in trainable:
        tensors["grad." + peft_key(name)] = p.grad.detach().contiguous()
    for name, p in model.named_parameters():
        assert p.requires_grad == ("lora_" in name), name
        assert p.requires_grad or p.grad is None, name
    model.zero_grad()
    adamw = base.ADAMW
    opt = torch.optim.AdamW([p for _, p in trainable], lr=adamw["lr"], betas=tuple(adamw["betas"]),
                            eps=adamw["eps"], weight_decay=adamw["weight_decay"])
    sched = get_linear_schedule_with_warmup(opt, base.WARMUP, base.STEPS)
    losses, norms, lrs = [], [], []
    for _ in range(base.STEPS):
        loss = model(**inputs).loss
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_([p for _, p in trainable], base.MAX_NORM)
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item())
        norms.append(norm.item())
    tensors["train.loss"] = torch.tensor(losses, dtype=torch.float32)
    tensors["train.grad_norm"] = torch.tensor(norms, dtype=torch.float32)
    tensors["train.lr"] = torch.tensor(lrs, dtype=torch.float32)
    meta = {"torch": torch.__version__, "transformers": transformers.__version__,
            "peft": peft.__version__, "mode": "eval", "adamw": adamw,
            "warmup_steps": base.WARMUP, "total_steps": base.STEPS,
            "max_grad_norm": base.MAX_NORM, "losses": losses}
    return tensors, meta


def main():
    torch.set_num_threads(1)
    for kind, case in CASES.items():
        out = OUT / f"{kind}_lora"
        shutil.rmtree(out, ignore_errors=True)
        model = AutoModelForCausalLM.from_pretrained(OUT / kind, attn_implementation="eager")
        torch.manual_seed(case["seed"])
        cfg = LoraConfig(task_type="CAUSAL_LM", r=case["r"], lora_alpha=case["lora_alpha"],
                         lora_dropout=0.0, target_modules=case["target_modules"],
                         fan_in_fan_out=(kind == "gpt2"))
        pm = get_peft_model(model, cfg)
        with torch.no_grad():
            for name, p in pm.named_parameters():
                if "lora_B" in name:
                    p.copy_(torch.randn_like(p) * 0.2)
        # A path relative to the repository root, as a user would pass it.
        pm.peft_config["default"].base_model_name_or_path = f"tests/fixtures/models/{kind}"
        pm.save_pretrained(out)
        (out / "README.md").unlink(missing_ok=True)  # PEFT's model card
        # PEFT keeps target_modules as a set (order varies with PYTHONHASHSEED): sort it.
        cfg_path = out / "adapter_config.json"
        saved = json.loads(cfg_path.read_text())
        saved["target_modules"] = sorted(saved["target_modules"])
        cfg_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
        tensors, meta = golden(pm, base.inputs_for("gpt2"))
        save_file(tensors, out / "golden.safetensors",
                  metadata={"golden": json.dumps(meta, sort_keys=True)})
        print(f"{kind}_lora: loss {tensors['loss'].item():.6f}, ten-step losses "
              f"{meta['losses'][0]:.4f} .. {meta['losses'][-1]:.4f}")


if __name__ == "__main__":
    main()
