#!/usr/bin/env python3
"""Peer of bench/ddp_step.sh: GPT-2 LM training with PyTorch DDP over gloo, N ranks x 1 thread.

Usage: ddp_peer.py --world W --n_layer L --n_embd C --n_head H --block_size T
           --batch_size B --steps S --warmup K

Each rank (torch.multiprocessing.spawn, backend gloo on 127.0.0.1) trains a
transformers GPT2LMHeadModel (dropout 0, vocab 50257, random weights from seed
0) on random token ids, batch B per rank: forward with labels, backward (DDP
all-reduces the gradient buckets, bucket_cap_mb 25, during backward),
clip_grad_norm_(1.0), AdamW (lr 1e-4), zero_grad. The warm-up steps are not
timed. W = 1 runs the same loop in one process without DDP. Prints one JSON
line: {"world": W, "tokens_per_second": ..., "step_ms": [...], "torch": version}
(tokens/s of the whole job: W * B * T per step over the median step time).
"""
import argparse
import json
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    for name, default in [("world", 2), ("n_layer", 4), ("n_embd", 256), ("n_head", 4),
                          ("block_size", 128), ("batch_size", 4), ("steps", 10), ("warmup", 2)]:
        p.add_argument("--" + name, type=int, default=default)
    return p.parse_args()


def rank_main(rank, a, port, out_path):
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    import torch.distributed as dist
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.set_num_threads(1)
    if a.world > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=a.world)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=a.n_layer, n_embd=a.n_embd, n_head=a.n_head,
                     n_positions=a.block_size, vocab_size=50257, resid_pdrop=0.0,
                     embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(cfg)
    model.train()
    ddp = torch.nn.parallel.DistributedDataParallel(model) if a.world > 1 else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(1 + rank)
    ids = torch.randint(0, 50257, (a.batch_size, a.block_size), generator=g)
    times = []
    for step in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        loss = ddp(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if a.world > 1:
            dist.barrier()
        if step >= a.warmup:
            times.append((time.perf_counter() - t0) * 1000.0)
    if rank == 0:
        times.sort()
        median = times[len(times) // 2]
        tps = a.world * a.batch_size * a.block_size / (median / 1000.0)
        with open(out_path, "w") as f:
            json.dump({"world": a.world, "tokens_per_second": tps, "step_ms": times,
                       "torch": torch.__version__}, f)
    if a.world > 1:
        dist.destroy_process_group()


def main():
    a = parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"
    import tempfile
    import torch.multiprocessing as mp
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    port = 29500 + os.getpid() % 1000
    if a.world == 1:
        rank_main(0, a, port, out)
    else:
        mp.spawn(rank_main, args=(a, port, out), nprocs=a.world, join=True)
    with open(out) as f:
        print(f.read())
    os.unlink(out)


if __name__ == "__main__":
    sys.exit(main())
