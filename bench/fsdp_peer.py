#!/usr/bin/env python3
"""The PyTorch FSDP2 peer of bench/fsdp_step.sh: transformers' GPT2LMHeadModel
(124M) or a ~410M LlamaForCausalLM (GPT-2 vocabulary, as loom's run with the GPT-2
tokenizer; random weights, dropout 0), each decoder
layer and then the root wrapped with `fully_shard` (torch.distributed.fsdp,
FSDP2; FULL_SHARD: reshard after forward), gloo, W ranks x 1 thread on this
machine, AdamW, batch 1 x 128 random tokens. Prints one line per rank: the
median step time after warm-up, tokens/s over all ranks, and the rank's peak
RSS (ru_maxrss). `--mode ddp` wraps with DistributedDataParallel instead, as
the peer of loom's DDP.

  python3 bench/fsdp_peer.py --model gpt2 --steps 4 [--ranks 2] [--mode fsdp]

Give the peer its best set-up: OMP_NUM_THREADS / torch threads = 1 per rank,
OMP_WAIT_POLICY=PASSIVE, OPENBLAS_* tuning variables unset in its process.
"""
import argparse
import os
import resource
import statistics
import sys
import time


def build_model(name):
    import transformers
    if name == "gpt2":
        cfg = transformers.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        model = transformers.GPT2LMHeadModel(cfg)
        return model, model.transformer.h, cfg.vocab_size
    cfg = transformers.LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=24,
                                   num_attention_heads=16, num_key_value_heads=16,
                                   vocab_size=50257, max_position_embeddings=512)
    model = transformers.LlamaForCausalLM(cfg)
    return model, model.model.layers, cfg.vocab_size


def worker(rank, args):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(0)
    model, layers, vocab = build_model(args.model)
    n_params = sum(p.numel() for p in model.parameters())
    if args.mode == "fsdp":
        from torch.distributed.fsdp import fully_shard
        for layer in layers:
            fully_shard(layer)
        fully_shard(model)
    else:
        model = torch.nn.parallel.DistributedDataParallel(model)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(rank)
    times = []
    for step in range(args.warmup + args.steps):
        x = torch.randint(0, vocab, (1, 128), generator=g)
        t0 = time.perf_counter()
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step >= args.warmup:
            times.append(time.perf_counter() - t0)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ms = 1000 * statistics.median(times)
    tok_s = args.ranks * 128 / (ms / 1000)
    print(f"torch {args.mode} {args.model} rank {rank}: {n_params / 1e6:.1f}M parameters, "
          f"step {ms:.0f} ms (median of {len(times)}), {tok_s:.0f} tokens/s over "
          f"{args.ranks} ranks, peak RSS {rss_mib:.0f} MiB, torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=["gpt2", "llama"], default="gpt2")
    p.add_argument("--mode", choices=["fsdp", "ddp"], default="fsdp")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--warmup", type=int, default=1)
    args = p.parse_args()
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        os.environ.pop(k, None)
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(args,), nprocs=args.ranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
