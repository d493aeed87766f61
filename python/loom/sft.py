"""loom.SFTTrainer / loom.SFTConfig / loom.LoraConfig: TRL's supervised
fine-tuning names over the C++ job's task "sft" (loom/job.h SftArguments;
docs/sft.md), so TRL's quick start runs with ``from loom import``:

    trainer = SFTTrainer(model="Qwen/Qwen3-0.6B", train_dataset=dataset,
                         args=SFTConfig(output_dir="out", max_length=512),
                         peft_config=LoraConfig(r=16, lora_alpha=32))
    trainer.train()

Rows are TRL's schemas (language modeling ``text``, conversational
``messages``, prompt-completion), tokenized in C++ as TRL's SFTTrainer
does; ``peft_config`` is a ``peft.LoraConfig`` or ``loom.LoraConfig`` (r,
lora_alpha, lora_dropout, target_modules are read). A TRL option loom does
not implement raises LoomError when set.
"""

import dataclasses
import os
from typing import List, Optional, Union

from loom import _core
from loom.trainer import Trainer
from loom.training_args import TrainingArguments

# SFTConfig's own fields: (name, type, default, help), TRL's names and defaults.
_SFT_FIELDS = [
    ("max_length", Optional[int], 1024, "Keep the first max_length tokens of each row "
     "(truncation_mode keep_start); None: no truncation."),
    ("completion_only_loss", Optional[bool], None, "Loss on completion tokens only; None: true "
     "for prompt-completion rows."),
    ("assistant_only_loss", bool, False, "Loss on the chat template's {% generation %} tokens."),
    ("dataset_text_field", str, "text", "The text key of language-modeling rows."),
    ("eos_token", Optional[str], None, "Appended to non-conversational text; None: the "
     "tokenizer's."),
    ("chat_template_path", Optional[str], None, "A .jinja file replacing the tokenizer's template."),
    ("packing", bool, False, "Pack rows into max_length sequences."),
    ("packing_strategy", str, "bfd", "Packing strategy: bfd (best-fit decreasing) or wrapped."),
    ("padding_free", bool, False, "Batches without padding (boundary-aware attention)."),
    ("pad_to_multiple_of", Optional[int], None, "Pad lengths to a multiple of this."),
    # TRL options loom does not implement: accepted at their defaults only.
    ("pad_token", Optional[str], None, "Not supported: must stay None."),
    ("dataset_num_proc", Optional[int], None, "Ignored (tokenizing runs on loom's threads)."),
    ("dataset_kwargs", Optional[dict], None, "Not supported: must stay None."),
    ("loss_type", str, "nll", "Only nll."),
    ("eval_packing", Optional[bool], None, "Not supported: must stay None."),
]
# TrainingArguments defaults TRL's SFTConfig changes.
_SFT_DEFAULTS = {"learning_rate": 2e-5, "logging_steps": 10}


def _make_sft_config():
    fields = [(name, tp, dataclasses.field(default=default, metadata={"help": help_text}))
              for name, tp, default, help_text in _SFT_FIELDS]
    base = {f.name: f for f in dataclasses.fields(TrainingArguments)}
    for name, default in _SFT_DEFAULTS.items():
        fields.append((name, base[name].type,
                       dataclasses.field(default=default, metadata=base[name].metadata)))
    cls = dataclasses.make_dataclass("SFTConfig", fields, bases=(TrainingArguments,))
    cls.__module__ = __name__
    cls.__doc__ = ("TRL's SFTConfig: loom.TrainingArguments plus the SFT fields (max_length, "
                   "completion_only_loss, assistant_only_loss, dataset_text_field, eos_token, "
                   "chat_template_path, packing, packing_strategy, padding_free, "
                   "pad_to_multiple_of); learning_rate 2e-5 and logging_steps 10 as TRL.")
    return cls


SFTConfig = _make_sft_config()


@dataclasses.dataclass
class LoraConfig:
    """PEFT's LoraConfig fields loom reads (loom/lora.h): r, lora_alpha,
    lora_dropout and target_modules (a list of module-name suffixes or
    "all-linear"; None: PEFT's default for the model type)."""

    r: int = 8
    lora_alpha: float = 8
    lora_dropout: float = 0.0
    target_modules: Optional[Union[List[str], str]] = None
    task_type: Optional[str] = "CAUSAL_LM"
    bias: str = "none"


def lora_fields(peft_config):
    """JobArguments' lora_* fields of a peft.LoraConfig or loom.LoraConfig."""
    if peft_config is None:
        return {}
    missing = [n for n in ("r", "lora_alpha", "lora_dropout") if not hasattr(peft_config, n)]
    if missing:
        raise _core.LoomError(f"[SFTTrainer] peft_config: expected a LoraConfig, got "
                              f"{type(peft_config).__name__}")
    if getattr(peft_config, "bias", "none") != "none":
        raise _core.LoomError("[SFTTrainer] peft_config.bias: only 'none' is supported")
    targets = getattr(peft_config, "target_modules", None)
    if targets is None:
        targets = ""
    elif not isinstance(targets, str):
        targets = ",".join(sorted(targets))
    return {"use_lora": True, "lora_r": int(peft_config.r),
            "lora_alpha": float(peft_config.lora_alpha),
            "lora_dropout": float(peft_config.lora_dropout), "lora_target_modules": targets}


class SFTTrainer(Trainer):
    """TRL's SFTTrainer arguments, in TRL's order."""

    _task = "sft"

    def __init__(self, model, args=None, data_collator=None, train_dataset=None,
                 eval_dataset=None, processing_class=None, compute_loss_func=None,
                 compute_metrics=None, callbacks=None, optimizers=(None, None),
                 optimizer_cls_and_kwargs=None, preprocess_logits_for_metrics=None,
                 peft_config=None, formatting_func=None):
        if formatting_func is not None or optimizer_cls_and_kwargs is not None:
            raise _core.LoomError("[SFTTrainer] formatting_func and optimizer_cls_and_kwargs are "
                                  "not supported: give rows in TRL's schemas")
        if args is not None and not isinstance(args, TrainingArguments):
            raise _core.LoomError(f"[SFTTrainer] args: expected loom.SFTConfig, got "
                                  f"{type(args).__name__}")
        if args is not None and not isinstance(args, SFTConfig):
            args = SFTConfig(**{f.name: getattr(args, f.name)
                                for f in dataclasses.fields(TrainingArguments)})
        self._lora = lora_fields(peft_config)
        self.peft_config = peft_config
        super().__init__(model=model, args=args, data_collator=data_collator,
                         train_dataset=train_dataset, eval_dataset=eval_dataset,
                         processing_class=processing_class, compute_loss_func=compute_loss_func,
                         compute_metrics=compute_metrics, callbacks=callbacks,
                         optimizers=optimizers,
                         preprocess_logits_for_metrics=preprocess_logits_for_metrics)

    def _default_args(self, model):
        name = os.path.basename(os.fspath(model)) if isinstance(model, (str, os.PathLike)) \
            else getattr(model, "architecture", "model")
        return SFTConfig(output_dir=f"{name}-SFT")

    def _sft_fields(self):
        args = self.args
        for name, default in (("pad_token", None), ("dataset_kwargs", None),
                              ("loss_type", "nll"), ("eval_packing", None)):
            if getattr(args, name) != default:
                raise _core.LoomError(f"[SFTConfig] {name}={getattr(args, name)!r} is not "
                                      f"supported (only {default!r})")
        fields = {name: getattr(args, name) for name in (
            "max_length", "completion_only_loss", "assistant_only_loss", "dataset_text_field",
            "packing", "packing_strategy", "padding_free")}
        for name in ("eos_token", "chat_template_path", "pad_to_multiple_of"):
            if getattr(args, name) is not None:
                fields[name] = getattr(args, name)
        fields.update(self._lora)
        return fields
