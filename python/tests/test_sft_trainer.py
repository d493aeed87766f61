"""loom.SFTTrainer / SFTConfig with TRL's names: TRL's quick start with
`from trl import` replaced by `from loom import`, on the shipped
conversations (tests/fixtures/sft/loss_rows.jsonl) and the tiny random
Qwen3 beside them, gives the losses TRL's own SFTTrainer gave
(trl_losses.json, written by tools/make_sft_fixtures.py); LoRA through
peft_config; a datasets.Dataset read by columns; bad input."""

import json
import pathlib

import pytest

import loom
from conftest import optional_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "sft"

# TRL's README quick start, with the fixture's model, data and arguments
# (those of trl_losses.json) in place of the hub ones.
QUICK_START = '''
from trl import SFTConfig, SFTTrainer
import json

dataset = [json.loads(line) for line in open(DATA)]
trainer = SFTTrainer(
    model=MODEL,
    train_dataset=dataset,
    args=SFTConfig(output_dir=OUT, max_steps=12, per_device_train_batch_size=8,
                   learning_rate=0.01, logging_steps=1, max_length=64,
                   assistant_only_loss=True, chat_template_path=TEMPLATE,
                   save_strategy="no", report_to="none", disable_tqdm=True),
)
trainer.train()
'''


def trl_fixture():
    return json.loads((FIXTURES / "trl_losses.json").read_text())


def test_trl_quick_start_with_the_import_changed_gives_trl_losses(tmp_path):
    assert "from trl import" in QUICK_START
    code = QUICK_START.replace("from trl import", "from loom import")
    scope = {"DATA": str(FIXTURES / "loss_rows.jsonl"), "MODEL": str(FIXTURES / "tiny_qwen3"),
             "TEMPLATE": str(FIXTURES / "chatml_generation.jinja"), "OUT": str(tmp_path / "out")}
    exec(compile(code, "quick_start.py", "exec"), scope)
    got = [h["loss"] for h in scope["trainer"].state.log_history if "loss" in h]
    want = trl_fixture()["losses"]
    assert len(got) == len(want) == 12
    for step, (g, w) in enumerate(zip(got, want), 1):
        assert g == pytest.approx(w, rel=1e-5), f"step {step}: loom {g}, TRL {w}"


def sft_args(tmp_path, **kw):
    values = dict(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=4,
                  logging_steps=1, max_length=64, report_to="none", disable_tqdm=True,
                  chat_template_path=str(FIXTURES / "chatml_generation.jinja"))
    values.update(kw)
    return loom.SFTConfig(**values)


def rows():
    return [json.loads(line) for line in open(FIXTURES / "loss_rows.jsonl")]


def test_sft_config_has_trl_defaults():
    config = loom.SFTConfig(output_dir="x")
    assert (config.learning_rate, config.logging_steps, config.max_length) == (2e-5, 10, 1024)
    assert (config.dataset_text_field, config.packing, config.assistant_only_loss) == (
        "text", False, False)
    assert isinstance(config, loom.TrainingArguments)


class PeftLikeLoraConfig:
    """The attributes peft.LoraConfig has (peft needs torch; CI has neither)."""

    def __init__(self):
        self.r, self.lora_alpha, self.lora_dropout = 4, 8, 0.0
        self.target_modules = {"v_proj", "q_proj"}
        self.bias = "none"


@pytest.mark.parametrize("config", [loom.LoraConfig(r=4, lora_alpha=8,
                                                    target_modules=["q_proj", "v_proj"]),
                                    PeftLikeLoraConfig()])
def test_peft_config_trains_a_lora_adapter(tmp_path, config):
    trainer = loom.SFTTrainer(model=str(FIXTURES / "tiny_qwen3"), args=sft_args(tmp_path),
                              train_dataset=rows(), peft_config=config)
    trainer.train()
    trainer.save_model()
    adapter = json.loads((tmp_path / "out" / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and adapter["lora_alpha"] == 8
    assert sorted(adapter["target_modules"]) == ["q_proj", "v_proj"]


def test_prompt_completion_rows_and_a_datasets_dataset(tmp_path):
    datasets = optional_module("datasets", "the datasets.Dataset case needs it")
    data = [json.loads(line) for line in open(FIXTURES / "prompt_completion.jsonl")]
    as_list = loom.SFTTrainer(model=str(FIXTURES / "tiny_qwen3"), args=sft_args(tmp_path / "a"),
                              train_dataset=data)
    as_list.train()
    ds = datasets.Dataset.from_list(data)
    as_dataset = loom.SFTTrainer(model=str(FIXTURES / "tiny_qwen3"),
                                 args=sft_args(tmp_path / "b"), train_dataset=ds)
    as_dataset.train()
    first = [h["loss"] for h in as_list.state.log_history if "loss" in h]
    second = [h["loss"] for h in as_dataset.state.log_history if "loss" in h]
    assert first == pytest.approx(second, rel=1e-6)


def test_sft_bad_input(tmp_path):
    model = str(FIXTURES / "tiny_qwen3")
    with pytest.raises(loom.LoomError, match="unknown role 'robot'"):
        loom.SFTTrainer(model=model, args=sft_args(tmp_path), train_dataset=[
            {"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]}])
    with pytest.raises(loom.LoomError, match="peft_config: expected a LoraConfig"):
        loom.SFTTrainer(model=model, args=sft_args(tmp_path), train_dataset=rows(),
                        peft_config={"r": 4})
    with pytest.raises(loom.LoomError, match="args: expected loom.SFTConfig"):
        loom.SFTTrainer(model=model, args="out", train_dataset=rows())
    with pytest.raises(loom.LoomError, match="loss_type"):
        loom.SFTTrainer(model=model, args=sft_args(tmp_path, loss_type="dft"),
                        train_dataset=rows())
