#!/usr/bin/env python3
"""Round trip loom LoRA -> PEFT: checks that adapters written by loom's
PeftModelForCausalLM.save_pretrained load with peft on top of the
transformers model and give loom's logits.

Assumes PyPI torch + transformers + peft and a built loom_tests binary.

  python3 tools/check_lora_roundtrip.py [--build build]   # prints the result
  python3 tools/check_lora_roundtrip.py --write   # and writes tests/fixtures/models/lora_roundtrip_result.txt (committed)

Steps: runs `<build>/loom_tests --gtest_filter=LoraRoundTrip.SaveForPeft` with
LOOM_LORA_ROUNDTRIP_DIR set to a temporary directory (tests/nn/lora_roundtrip_test.cpp:
loom attaches LoRA adapters to the Llama (all-linear), Qwen2 (PEFT's default
q_proj, v_proj) and GPT-2 (c_attn, c_proj, c_fc: Conv1D) fixtures, trains them
three SGD steps on the lazy device, saves the adapter and its logits for the
golden inputs). Then for each adapter directory: transformers'
AutoModelForCausalLM on the base fixture (eager attention), then
peft.PeftModel.from_pretrained(model, dir), eval mode, the same inputs; the
largest |peft - loom| difference must be below 1e-4 * max|logits|, peft must
report no missing or unexpected adapter keys, and the adapter must have moved
the logits away from the base model's (> 1e-4).
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

import peft
import torch
import transformers
from peft import PeftModel
from safetensors.torch import load_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "models"
RESULT = FIXTURES / "lora_roundtrip_result.txt"
MODELS = ["llama", "qwen2", "gpt2"]


def check(saved, name):
    golden = load_file(str(FIXTURES / name / "golden.safetensors"))
    base = transformers.AutoModelForCausalLM.from_pretrained(FIXTURES / name,
                                                             attn_implementation="eager")
    base.eval()
    inputs = {k: golden[k] for k in ("input_ids", "attention_mask") if k in golden}
    with torch.no_grad():
        base_logits = base(**inputs).logits
    model = PeftModel.from_pretrained(base, saved)
    model.eval()
    with torch.no_grad():
        logits = model(**inputs).logits
    # PEFT loads with set_peft_model_state_dict; its load_result lists what did not match.
    result = model.load_adapter(saved, adapter_name="check")
    problems = [f"missing {k}" for k in result.missing_keys if ".check." in k and "lora_" in k]
    problems += [f"unexpected {k}" for k in result.unexpected_keys]
    loom = load_file(str(pathlib.Path(saved) / "loom_logits.safetensors"))["logits"]
    diff = (logits - loom).abs().max().item()
    scale = loom.abs().max().item()
    moved = (logits - base_logits).abs().max().item()
    targets = sorted(model.peft_config["default"].target_modules)
    ok = diff <= 1e-4 * scale and not problems and moved > 1e-4
    return ok, diff, scale, moved, problems, targets


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build", help="loom build directory (holds loom_tests)")
    parser.add_argument("--write", action="store_true",
                        help="also write the result to its committed file in tests/fixtures/")
    args = parser.parse_args()
    torch.set_num_threads(1)
    binary = ROOT / args.build / "loom_tests"
    lines = [f"loom LoRA adapter -> peft {peft.__version__} + transformers "
             f"{transformers.__version__} (torch {torch.__version__}) round trip; "
             "written by tools/check_lora_roundtrip.py"]
    all_ok = True
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LOOM_LORA_ROUNDTRIP_DIR=tmp)
        run = subprocess.run([str(binary), "--gtest_filter=LoraRoundTrip.SaveForPeft"],
                             env=env, capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout[-4000:], run.stderr[-4000:], sep="\n")
            sys.exit("loom_tests failed")
        for name in MODELS:
            saved = os.path.join(tmp, name)
            ok, diff, scale, moved, problems, targets = check(saved, name)
            files = sorted(f for f in os.listdir(saved) if f != "loom_logits.safetensors")
            lines.append(f"{'PASS' if ok else 'FAIL'} {name}: PeftModel from {', '.join(files)} "
                         f"(target_modules {','.join(targets)}); max |peft - loom| logits = "
                         f"{diff:.3g} (max |logits| {scale:.3g}; the adapter moved them "
                         f"{moved:.3g} from the base model's)"
                         + (f"; {'; '.join(problems)}" if problems else ""))
            all_ok &= ok
    lines.append("RESULT: " + ("PASS" if all_ok else "FAIL"))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.write:
        RESULT.write_text(text)
        print(f"wrote {RESULT.relative_to(ROOT)}")
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
