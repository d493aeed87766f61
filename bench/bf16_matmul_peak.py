#!/usr/bin/env python3
"""The device's bf16 matmul peak, measured: an n x n x n product of random bf16 matrices
(f32 accumulation, bf16 result) through jax.jit, the mean of --iters products after
--warmup, timed on the host around block_until_ready(); 2 n^3 FLOPs each. The denominator
of the model FLOPs utilisation (MFU) that scripts/device/run.sh prints, measured in the
same call as the step it rates, on the same card and clocks (the vendor's dense peak is
higher: an H100 SXM's 989 TFLOP/s; measured here about 790).

Usage: bf16_matmul_peak.py [--n 8192] [--iters 10] [--warmup 3]
Prints one JSON line: n, iters, seconds, tflops, device, jax. Exits 3 without jax.
"""
import argparse
import json
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:
        print("bf16_matmul_peak: skipped: %s" % e)
        sys.exit(3)
    ka, kb = jax.random.split(jax.random.PRNGKey(0))
    x = jax.random.normal(ka, (a.n, a.n), jnp.bfloat16)
    y = jax.random.normal(kb, (a.n, a.n), jnp.bfloat16)
    mm = jax.jit(lambda u, v: jnp.matmul(u, v, preferred_element_type=jnp.float32)
                 .astype(jnp.bfloat16))
    for _ in range(a.warmup):
        mm(x, y).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(a.iters):
        z = mm(x, y)
    z.block_until_ready()
    seconds = (time.perf_counter() - t0) / a.iters
    dev = jax.devices()[0]
    print(json.dumps({"n": a.n, "iters": a.iters, "seconds": seconds,
                      "tflops": 2.0 * a.n ** 3 / seconds / 1e12,
                      "device": getattr(dev, "device_kind", str(dev)), "jax": jax.__version__}))


if __name__ == "__main__":
    main()
