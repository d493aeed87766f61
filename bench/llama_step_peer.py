#!/usr/bin/env python3
"""Peer of bench/llama_step.cpp: one Llama-style causal-LM training step in PyTorch +
transformers' LlamaForCausalLM.

Usage: llama_step_peer.py --mode eager|compile --n_layer L --hidden C --n_head H --n_kv_head K
           --block_size T --batch_size B --threads N --steps S --warmup W [--bf16 0|1]

The model is bench/llama_step.cpp's: vocab 50257, hidden C, H heads, K key/value heads
(grouped-query attention), SwiGLU width 8/3 C rounded up to 64, RMSNorm, rotary (theta 10^4),
untied head, no dropout, SDPA attention. The step: forward with labels (causal-LM loss inside
the model), backward, clip_grad_norm_(1.0), AdamW lr 1e-4 (weight decay 0.01 except biases
and norm weights), zero_grad(set_to_none=True); random weights, token ids (i * 7919 + 13) mod
50257 as loom's, the same batch every step, train mode. Set-up, timing and the JSON line:
bench/peer_common.py.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402

ARGS = peer_common.parse_args([("n_layer", 2), ("hidden", 128), ("n_head", 4), ("n_kv_head", 2),
                               ("block_size", 64), ("batch_size", 4), ("threads", 2),
                               ("steps", 5), ("warmup", 2), ("bf16", 0)])
peer_common.setup(ARGS.threads)
torch, transformers = peer_common.import_torch("llama_step_peer")


def intermediate_size():
    return (8 * ARGS.hidden // 3 + 63) // 64 * 64


def main():
    torch.set_num_threads(ARGS.threads)
    torch.manual_seed(0)
    peer_common.print_gemm_info(torch, ARGS.batch_size * ARGS.block_size, ARGS.hidden,
                                intermediate_size())
    cfg = transformers.LlamaConfig(
        vocab_size=50257, max_position_embeddings=max(1024, ARGS.block_size),
        hidden_size=ARGS.hidden, num_hidden_layers=ARGS.n_layer, num_attention_heads=ARGS.n_head,
        num_key_value_heads=ARGS.n_kv_head or ARGS.n_head,
        intermediate_size=intermediate_size(), tie_word_embeddings=False,
        attn_implementation="sdpa")
    model = transformers.LlamaForCausalLM(cfg)
    model.train()
    opt, fused = peer_common.adamw(torch, model, 1e-4, ("bias", "norm"))
    step_model = torch.compile(model) if ARGS.mode == "compile" else model
    n = ARGS.batch_size * ARGS.block_size
    ids = torch.tensor([(i * 7919 + 13) % 50257 for i in range(n)]).view(ARGS.batch_size, -1)
    stats = peer_common.timed_steps(torch, ARGS, model, opt,
                                    lambda: step_model(input_ids=ids, labels=ids).loss)
    peer_common.report(torch, transformers, ARGS, model, stats, fused,
                       n_kv_head=cfg.num_key_value_heads)


if __name__ == "__main__":
    main()
