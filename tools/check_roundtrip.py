#!/usr/bin/env python3
"""Round trip loom -> Hugging Face transformers: checks that models written by
loom's save_pretrained load in transformers and give loom's logits.

Assumes PyPI torch + transformers and a built loom_tests binary.

  python3 tools/check_roundtrip.py [--build build]   # prints the result
  python3 tools/check_roundtrip.py --write   # and writes tests/fixtures/models/roundtrip_result.txt (committed)

Steps: runs `<build>/loom_tests --gtest_filter=ModelRoundTrip.SaveForTransformers`
with LOOM_ROUNDTRIP_DIR set to a temporary directory (tests/nn/roundtrip_test.cpp:
loom loads each fixture of tests/fixtures/models, trains it one SGD step on the
lazy device, saves it with save_pretrained — GPT-2 and Llama also in 50 KB shards — and
writes its logits for the golden inputs as loom_logits.safetensors). Then, for
each saved directory, transformers' from_pretrained (the class named in
config.json, eager attention, eval mode) runs the same inputs; the largest
|transformers - loom| difference must be below 1e-4 * max|logits|, and
transformers must report no missing or unexpected keys.
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "models"
RESULT = FIXTURES / "roundtrip_result.txt"
MODELS = {"gpt2": "gpt2", "gpt2_sharded": "gpt2", "bert": "bert", "bert_seqcls": "bert_seqcls",
          "llama": "llama", "llama_sharded": "llama", "qwen2": "qwen2", "qwen3": "qwen3"}


def check(saved, golden_dir):
    golden = load_file(str(golden_dir / "golden.safetensors"))
    arch = transformers.AutoConfig.from_pretrained(saved).architectures[0]
    cls = getattr(transformers, arch)
    model, info = cls.from_pretrained(saved, attn_implementation="eager", output_loading_info=True)
    model.eval()
    inputs = {k: golden[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in golden}
    with torch.no_grad():
        logits = model(**inputs).logits
    loom = load_file(str(pathlib.Path(saved) / "loom_logits.safetensors"))["logits"]
    diff = (logits - loom).abs().max().item()
    scale = loom.abs().max().item()
    moved = (logits - golden["logits"]).abs().max().item()  # loom trained a step: must differ
    problems = [f"{k}: {v}" for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys")]
    ok = diff <= 1e-4 * scale and not problems and moved > 1e-4
    return ok, arch, diff, scale, moved, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build", help="loom build directory (holds loom_tests)")
    parser.add_argument("--write", action="store_true",
                        help="also write the result to its committed file in tests/fixtures/")
    args = parser.parse_args()
    torch.set_num_threads(1)
    binary = ROOT / args.build / "loom_tests"
    lines = [f"loom save_pretrained -> transformers {transformers.__version__} "
             f"(torch {torch.__version__}) round trip; written by tools/check_roundtrip.py"]
    all_ok = True
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LOOM_ROUNDTRIP_DIR=tmp)
        run = subprocess.run([str(binary), "--gtest_filter=ModelRoundTrip.SaveForTransformers"],
                             env=env, capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout[-4000:], run.stderr[-4000:], sep="\n")
            sys.exit("loom_tests failed")
        for saved, fixture in MODELS.items():
            ok, arch, diff, scale, moved, problems = check(os.path.join(tmp, saved), FIXTURES / fixture)
            files = sorted(f for f in os.listdir(os.path.join(tmp, saved)) if f != "loom_logits.safetensors")
            lines.append(f"{'PASS' if ok else 'FAIL'} {saved}: {arch} from {', '.join(files)}; "
                         f"max |transformers - loom| logits = {diff:.3g} (max |logits| {scale:.3g}; "
                         f"moved {moved:.3g} from the fixture by loom's SGD step)"
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
