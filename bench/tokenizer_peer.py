#!/usr/bin/env python3
"""Peer of bench/tokenizer.cpp: the Hugging Face `tokenizers` library on the same text.

Usage: tokenizer_peer.py TOKENIZER_JSON TEXTS_FILE REPEATS
TEXTS_FILE holds one JSON string per line (the benchmark's units of text). Encodes them all
with Tokenizer.encode_batch (add_special_tokens=False) REPEATS times on one thread (run with
RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false) and prints one JSON line:
{"tokens": N, "checksum": C, "best_cpu_s": T, "best_wall_s": W, "version": V}
where the checksum is the same id hash bench/tokenizer.cpp computes, so the two can be
checked to produce identical ids.
"""
import json
import sys
import time

import tokenizers


def checksum(encodings):
    h = 0
    mod = (1 << 61) - 1
    for e in encodings:
        for i in e.ids:
            h = (h * 1000003 + i + 1) % mod
    return h


def main():
    path, texts_file, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tok = tokenizers.Tokenizer.from_file(path)
    with open(texts_file, encoding="utf-8") as f:
        texts = [json.loads(line) for line in f if line.strip()]
    best_cpu = best_wall = float("inf")
    encodings = None
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        encodings = tok.encode_batch(texts, add_special_tokens=False)
        c1, w1 = time.process_time(), time.perf_counter()
        best_cpu = min(best_cpu, c1 - c0)
        best_wall = min(best_wall, w1 - w0)
    tokens = sum(len(e.ids) for e in encodings)
    print(json.dumps(dict(tokens=tokens, checksum=checksum(encodings), best_cpu_s=best_cpu,
                          best_wall_s=best_wall, version=tokenizers.__version__)))


if __name__ == "__main__":
    main()
