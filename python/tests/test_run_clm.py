"""examples/python/run_clm.py, written against transformers, run with
`from transformers import` replaced by `from loom import` and nothing else
changed: its losses equal `loom train`'s with the same flags (1e-6). The CLI
is $LOOM_CLI (scripts/test.sh sets it to the build's loom); without it the
comparison skips, the script still runs."""

import importlib.util
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = str(ROOT / "tests" / "fixtures" / "sft" / "tiny_qwen3")


def loom_version_of_script(tmp_path):
    text = (ROOT / "examples" / "python" / "run_clm.py").read_text()
    assert text.count("from transformers import") == 1
    path = tmp_path / "run_clm_loom.py"
    path.write_text(text.replace("from transformers import", "from loom import"))
    spec = importlib.util.spec_from_file_location("run_clm_loom", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    lines = [f"Line {i}: it is a truth universally acknowledged, that {i % 5} dogs run."
             for i in range(60)]
    lines[7] = ""  # a blank line counts too (its newline is a token)
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def flags(tmp_path, out):
    return ["--model_name_or_path", MODEL, "--train_file", corpus(tmp_path), "--block_size", "16",
            "--do_train", "true", "--max_steps", "6", "--logging_steps", "1",
            "--per_device_train_batch_size", "4", "--learning_rate", "0.005", "--seed", "11",
            "--save_strategy", "no", "--report_to", "none", "--disable_tqdm", "true",
            "--device", "lazy", "--output_dir", str(out)]


def logged_losses(out):
    state = json.loads((pathlib.Path(out) / "trainer_state.json").read_text())
    return [h["loss"] for h in state["log_history"] if "loss" in h]


def test_run_clm_with_the_loom_import_equals_loom_train(tmp_path):
    script = loom_version_of_script(tmp_path)
    trainer = script.main(flags(tmp_path, tmp_path / "py"))
    py = logged_losses(tmp_path / "py")
    assert len(py) == 6 and py == [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert (tmp_path / "py" / "train_results.json").is_file()
    assert (tmp_path / "py" / "model.safetensors").is_file()
    cli = os.environ.get("LOOM_CLI")
    if not cli or not os.path.isfile(cli):
        pytest.skip("LOOM_CLI (the loom binary) is not set: scripts/test.sh sets it")
    proc = subprocess.run([cli, "train", *flags(tmp_path, tmp_path / "cli")], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    want = logged_losses(tmp_path / "cli")
    assert len(want) == 6
    for step, (got, ref) in enumerate(zip(py, want), 1):
        assert got == pytest.approx(ref, rel=1e-6, abs=1e-6), f"step {step}: {py} vs {want}"
