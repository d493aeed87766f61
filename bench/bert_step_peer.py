#!/usr/bin/env python3
"""Peer of bench/bert_step.cpp: one BERT sequence-classification training step in PyTorch +
transformers, MiniLM shape by default.

Usage: bert_step_peer.py --mode eager|compile|xla --batch_size B --seq_len T --n_layer L --hidden C
           --n_head H --threads N --steps S --warmup W [--dropout P] [--bf16 0|1]

The step is the one bench/bert_step.cpp times on loom: BertForSequenceClassification (2 labels,
intermediate 4 x hidden, vocab 30522) forward with labels and a padding mask (row i keeps
T - (7 i mod min(40, T)) tokens; the same ids as loom's), backward, clip_grad_norm_(1.0), AdamW
(lr 5e-5, weight decay 0.01 except biases and LayerNorm weights, fused=True where available),
zero_grad(set_to_none=True); train mode, SDPA attention. --bf16 1 runs the forward under
torch.autocast("cpu", dtype=torch.bfloat16) with f32 master weights. `--mode compile` wraps the
model in torch.compile; `--mode xla` runs the step in PyTorch/XLA on its PJRT CPU device (run it
with .venv-torch-xla/bin/python: scripts/setup_peers.sh), syncing and waiting for the device at
the end of each step, AdamW non-fused; the warm-up steps include the compilations.

Set-up (the peer's best, in its own process), the "gemm:" lines, timing and the JSON line
bench/step_bench.h expects: bench/peer_common.py.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402

ARGS = peer_common.parse_args([("batch_size", 16), ("seq_len", 64), ("n_layer", 6),
                               ("hidden", 384), ("n_head", 12), ("threads", 2), ("steps", 5),
                               ("warmup", 2), ("bf16", 0)], peer_common.XLA_MODES)
peer_common.setup(ARGS.threads, ARGS.mode)
torch, transformers = peer_common.import_torch("bert_step_peer", ARGS.mode)


def make_batch():
    b, t = ARGS.batch_size, ARGS.seq_len
    ids, mask = torch.zeros(b, t, dtype=torch.long), torch.zeros(b, t, dtype=torch.long)
    for i in range(b):
        length = t - (7 * i) % max(1, min(40, t))
        for j in range(length):
            ids[i, j] = (i * 7919 + j * 104729 + 101) % 30522
            mask[i, j] = 1
    labels = torch.tensor([i % 2 for i in range(b)])
    return ids, mask, labels


def make_model(dev):
    cfg = transformers.BertConfig(
        vocab_size=30522, hidden_size=ARGS.hidden, num_hidden_layers=ARGS.n_layer,
        num_attention_heads=ARGS.n_head, intermediate_size=4 * ARGS.hidden,
        hidden_dropout_prob=ARGS.dropout, attention_probs_dropout_prob=ARGS.dropout,
        num_labels=2, attn_implementation="sdpa")
    model = peer_common.to_device(transformers.BertForSequenceClassification(cfg), dev)
    model.train()
    opt, fused = peer_common.adamw(torch, model, 5e-5, ("bias", "layernorm"))
    return model, opt, fused


def main():
    torch.set_num_threads(ARGS.threads)
    if ARGS.mode != "xla":  # on XLA the GEMMs are XLA's own, not torch's BLAS
        peer_common.print_gemm_info(torch, ARGS.batch_size * ARGS.seq_len, ARGS.hidden,
                                    4 * ARGS.hidden)
    dev = peer_common.device(torch, ARGS)
    torch.manual_seed(0)  # after the GEMM probe: the same weights in every mode
    model, opt, fused = make_model(dev)
    step_model = torch.compile(model) if ARGS.mode == "compile" else model
    ids, mask, labels = (x.to(dev) for x in make_batch())
    stats = peer_common.timed_steps(
        torch, ARGS, model, opt,
        lambda: step_model(input_ids=ids, attention_mask=mask, labels=labels).loss)
    peer_common.report(torch, transformers, ARGS, model, stats, fused)


if __name__ == "__main__":
    main()
