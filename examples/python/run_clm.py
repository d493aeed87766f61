"""A run_clm-style script (transformers' examples/pytorch/language-modeling/
run_clm.py, shortened) written against transformers' API: fine-tune or train
from scratch a causal language model on a text file.

With its one import line's ``transformers`` replaced by ``loom`` (and
nothing else changed) it runs on loom, and its losses equal those of
``loom train`` with the same flags (python/tests/test_run_clm.py):

    python examples/python/run_clm.py --model_name_or_path tests/fixtures/sft/tiny_qwen3 \\
        --train_file corpus.txt --block_size 32 --do_train true --max_steps 6 \\
        --output_dir out --report_to none

Unlike transformers' script it reads the text file with plain Python (no
``datasets``; the lines as datasets' "text" loader gives them) and
concatenates every line before cutting blocks (run_clm groups 1000 lines at
a time; `loom train` concatenates the whole file).
"""

import math
import sys
from dataclasses import dataclass, field
from typing import Optional

from transformers import (AutoConfig, AutoModelForCausalLM, AutoTokenizer, HfArgumentParser,
                          Trainer, TrainingArguments, default_data_collator, set_seed)


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(
        default=None, metadata={"help": "A model directory or hub id; unset: train from scratch."})
    model_type: Optional[str] = field(
        default=None, metadata={"help": "From scratch: the model type (gpt2, llama, ...)."})
    config_overrides: Optional[str] = field(
        default=None, metadata={"help": "From scratch: 'n_embd=10,n_layer=2'."})
    tokenizer_name: Optional[str] = field(
        default=None, metadata={"help": "Tokenizer directory or id; unset: model_name_or_path."})


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None, metadata={"help": "A .txt file."})
    validation_file: Optional[str] = field(default=None, metadata={"help": "A .txt file."})
    block_size: Optional[int] = field(default=None, metadata={"help": "Tokens per example."})
    keep_linebreaks: bool = field(default=True, metadata={"help": "Keep each line's newline."})


def read_lines(path, keep_linebreaks):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines(keepends=keep_linebreaks)


def group_texts(token_lists, block_size):
    """Concatenates the token lists and cuts blocks of block_size (the rest dropped)."""
    concatenated = [t for ids in token_lists for t in ids]
    total = (len(concatenated) // block_size) * block_size
    return [{"input_ids": concatenated[i:i + block_size],
             "labels": concatenated[i:i + block_size]} for i in range(0, total, block_size)]


def main(argv=None):
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses(argv)
    set_seed(training_args.seed)

    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name
                                              or model_args.model_name_or_path)
    if model_args.model_name_or_path:
        model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    else:
        config = AutoConfig.for_model(model_args.model_type)
        if model_args.config_overrides:
            config.update_from_string(model_args.config_overrides)
        model = AutoModelForCausalLM.from_config(config)

    block_size = data_args.block_size or 1024

    def blocks(path):
        lines = read_lines(path, data_args.keep_linebreaks)
        return group_texts(tokenizer(lines)["input_ids"], block_size)

    train_dataset = blocks(data_args.train_file) if training_args.do_train else None
    eval_dataset = blocks(data_args.validation_file) if data_args.validation_file else None

    trainer = Trainer(model=model, args=training_args, train_dataset=train_dataset,
                      eval_dataset=eval_dataset, processing_class=tokenizer,
                      data_collator=default_data_collator)
    if training_args.do_train:
        train_result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        trainer.save_model()
        metrics = train_result.metrics
        metrics["train_samples"] = len(train_dataset)
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)
        trainer.save_state()
    if training_args.do_eval and eval_dataset is not None:
        metrics = trainer.evaluate()
        metrics["eval_samples"] = len(eval_dataset)
        try:
            metrics["perplexity"] = math.exp(metrics["eval_loss"])
        except OverflowError:
            metrics["perplexity"] = float("inf")
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
    return trainer


if __name__ == "__main__":
    main(sys.argv[1:])
