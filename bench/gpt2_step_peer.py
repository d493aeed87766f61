#!/usr/bin/env python3
"""Peer of bench/gpt2_step.cpp: one GPT-2 LM training step in PyTorch + transformers.

Usage: gpt2_step_peer.py --mode eager|compile|xla --n_layer L --n_embd C --n_head H
           --block_size T --batch_size B --threads N --steps S --warmup W [--dropout P]
           [--bf16 0|1]

With --bf16 1 the forward runs under torch.autocast("cpu", dtype=torch.bfloat16) (f32 master
weights and optimizer, as the HF Trainer's --bf16); the backward follows autocast's casts.

The step is the one bench/gpt2_step.cpp times on loom: forward with labels (causal-LM loss
inside the model), backward, clip_grad_norm_(1.0), AdamW (weight decay 0.01 except biases and
LayerNorm weights, as the Trainer groups them), zero_grad(set_to_none=True). Random weights and
random token ids (vocab 50257), the same batch every step, model in train mode.
`--mode compile` wraps the model in torch.compile (inductor); the warm-up steps include its
compilation. `--mode xla` runs the step in PyTorch/XLA on its PJRT CPU device (run it with
.venv-torch-xla/bin/python, where torch_xla and its torch are installed: scripts/setup_peers.sh),
syncing and waiting for the device at the end of each step. Set-up, GEMM report, timing and the
JSON line: bench/peer_common.py.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402

ARGS = peer_common.parse_args([("n_layer", 2), ("n_embd", 128), ("n_head", 4),
                               ("block_size", 64), ("batch_size", 4), ("threads", 2),
                               ("steps", 5), ("warmup", 2), ("bf16", 0)],
                              peer_common.XLA_MODES)
peer_common.setup(ARGS.threads, ARGS.mode)
torch, transformers = peer_common.import_torch("gpt2_step_peer", ARGS.mode)


def main():
    torch.set_num_threads(ARGS.threads)
    if ARGS.mode != "xla":  # on XLA the GEMMs are XLA's own, not torch's BLAS
        peer_common.print_gemm_info(torch, ARGS.batch_size * ARGS.block_size, ARGS.n_embd,
                                    4 * ARGS.n_embd)
    dev = peer_common.device(torch, ARGS)
    torch.manual_seed(0)  # after the GEMM probe: the same weights in every mode
    cfg = transformers.GPT2Config(
        vocab_size=50257, n_positions=max(1024, ARGS.block_size), n_embd=ARGS.n_embd,
        n_layer=ARGS.n_layer, n_head=ARGS.n_head, resid_pdrop=ARGS.dropout,
        embd_pdrop=ARGS.dropout, attn_pdrop=ARGS.dropout, attn_implementation="sdpa")
    model = peer_common.to_device(transformers.GPT2LMHeadModel(cfg), dev)
    model.train()
    opt, fused = peer_common.adamw(torch, model, 1e-4, ("bias", ".ln_", "norm"))
    step_model = torch.compile(model) if ARGS.mode == "compile" else model
    ids = torch.randint(0, 50257, (ARGS.batch_size, ARGS.block_size)).to(dev)
    stats = peer_common.timed_steps(torch, ARGS, model, opt,
                                    lambda: step_model(input_ids=ids, labels=ids).loss)
    peer_common.report(torch, transformers, ARGS, model, stats, fused)


if __name__ == "__main__":
    main()
