"""The Hugging Face Trainer running scripts/finetune.sh's job, for bench/finetune_trainer.sh.

Same model (assets/finetune/minilm, BertForSequenceClassification, 2 labels), same data
(assets/finetune/data/{train,eval}.csv), same settings as the `loom train` command of
scripts/finetune.sh: every sentence padded/truncated to 64 tokens, batch 16 (eval 50),
lr 5e-5, 3 epochs (or --max_steps), warmup_ratio 0.1, weight_decay 0.01, evaluation on start
and after each epoch, no saving, seed 42. The peer's best set-up (bench/peer_common.py):
OMP_WAIT_POLICY=PASSIVE and --threads before torch loads, torch.set_num_threads, fused AdamW
(optim adamw_torch_fused), SDPA attention, no dataloader workers. transformers 5 spells
warmup_ratio 0.1 as warmup_steps=0.1 (a float below 1 is a ratio of the total steps).

Prints one JSON line: train_runtime, train_samples_per_second, final eval_accuracy, versions.
"""
import argparse
import csv
import json
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--root", required=True, help="the loom checkout (assets/finetune/ there)")
p.add_argument("--output_dir", required=True)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--max_steps", type=int, default=-1, help="-1: the 3 epochs")
p.add_argument("--bf16", type=int, default=0)
args = p.parse_args()
peer_common.setup(args.threads)
torch, transformers = peer_common.import_torch("finetune_trainer_peer")
torch.set_num_threads(args.threads)

model_dir = os.path.join(args.root, "assets/finetune/minilm")
data_dir = os.path.join(args.root, "assets/finetune/data")
tok = transformers.AutoTokenizer.from_pretrained(model_dir)


class Rows(torch.utils.data.Dataset):
    """sentence,label rows tokenized as run_glue does with --pad_to_max_length --max_seq_length 64."""

    def __init__(self, path):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        enc = tok([r["sentence"] for r in rows], padding="max_length", truncation=True,
                  max_length=64)
        self.items = [{k: enc[k][i] for k in enc} | {"labels": int(r["label"])}
                      for i, r in enumerate(rows)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return {k: torch.tensor(v) for k, v in self.items[i].items()}


def accuracy(pred):
    return {"accuracy": float((pred.predictions.argmax(-1) == pred.label_ids).mean())}


model = transformers.AutoModelForSequenceClassification.from_pretrained(
    model_dir, num_labels=2, attn_implementation="sdpa")
targs = transformers.TrainingArguments(
    output_dir=args.output_dir, per_device_train_batch_size=16, per_device_eval_batch_size=50,
    learning_rate=5e-5, num_train_epochs=3, max_steps=args.max_steps, warmup_steps=0.1,
    weight_decay=0.01, logging_steps=25, eval_strategy="epoch", eval_on_start=True,
    save_strategy="no", seed=42, report_to=[], use_cpu=True, dataloader_num_workers=0,
    optim="adamw_torch_fused", bf16=bool(args.bf16), disable_tqdm=True)
trainer = transformers.Trainer(model=model, args=targs, train_dataset=Rows(
    os.path.join(data_dir, "train.csv")), eval_dataset=Rows(os.path.join(data_dir, "eval.csv")),
    compute_metrics=accuracy)
out = trainer.train().metrics
final = trainer.evaluate()
print(json.dumps({
    "train_runtime": out["train_runtime"],
    "train_samples_per_second": out["train_samples_per_second"],
    "eval_accuracy": final["eval_accuracy"],
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    "torch": torch.__version__, "transformers": transformers.__version__,
    "threads": torch.get_num_threads(), "optim": targs.optim, "bf16": bool(args.bf16),
}))
