#!/usr/bin/env python3
"""Writes tests/fixtures/models/llama_tied_config.safetensors, read by
tests/nn/pretrained_test.cpp (Pretrained.TiedConfigOverAnUntiedCheckpoint...):
what transformers computes when config.json says tie_word_embeddings: true over
a checkpoint that holds its own lm_head.weight (tests/fixtures/models/llama,
saved untied).

transformers 5 (PreTrainedModel.tie_weights during from_pretrained) finds both
weights in the checkpoint with different values and does NOT tie them (with a
warning): the logits are those of the untied model. This script checks that
rule on the installed transformers (lm_head not the embedding; the logits equal
the fixture's golden ones) and stores the greedy continuation and the logits.

  python3 tools/make_tied_config_fixture.py

Assumes PyPI torch and transformers (CPU); the llama fixture from
tools/make_llama_fixtures.py.
"""
import json
import pathlib
import shutil
import tempfile

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import LlamaForCausalLM

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "tests/fixtures/models/llama"
OUT = ROOT / "tests/fixtures/models/llama_tied_config.safetensors"


def main():
    torch.manual_seed(0)
    golden = load_file(str(SRC / "golden.safetensors"))
    with tempfile.TemporaryDirectory() as tmp:
        d = pathlib.Path(tmp) / "llama"
        shutil.copytree(SRC, d)
        cfg = json.loads((d / "config.json").read_text())
        cfg["tie_word_embeddings"] = True
        (d / "config.json").write_text(json.dumps(cfg, indent=2))
        model = LlamaForCausalLM.from_pretrained(str(d)).eval()
    head, embed = model.lm_head.weight, model.model.embed_tokens.weight
    assert head.data_ptr() != embed.data_ptr(), "transformers tied them"
    assert not torch.equal(head, embed)
    with torch.no_grad():
        logits = model(input_ids=golden["input_ids"],
                       attention_mask=golden["attention_mask"]).logits
        greedy = model.generate(golden["generate.prompt"], max_new_tokens=10, do_sample=False,
                                eos_token_id=None, pad_token_id=0)
    torch.testing.assert_close(logits, golden["logits"], rtol=0, atol=1e-5)
    save_file({"logits": logits.contiguous(), "generate.greedy": greedy.contiguous()}, str(OUT),
              metadata={"transformers": transformers.__version__,
                        "rule": "both weights in the checkpoint and different: not tied"})
    print("wrote", OUT, "transformers", transformers.__version__)


if __name__ == "__main__":
    main()
