#!/usr/bin/env python3
"""Peer of the token cache's streaming pass (bench/corpus_cache.sh): the Hugging Face
`tokenizers` library tokenizing the lines of a text file in ~1 MiB batches with
Tokenizer.encode_batch (add_special_tokens=False), as loom's tokenize_to_cache does, on the
threads RAYON_NUM_THREADS allows. Ids are discarded after counting (loom writes them to disk).

Usage: corpus_tokenize_peer.py TOKENIZER_JSON TEXT_FILE [MAX_MB]
Prints one JSON line: {"mb": M, "lines": L, "tokens": N, "wall_s": W, "mb_per_s": R,
"threads": T, "version": V}. Lines keep their "\n" (run_clm's keep_linebreaks default).
"""
import json
import os
import sys
import time

import tokenizers


def batches(path, batch_bytes, max_bytes):
    batch, size, total = [], 0, 0
    with open(path, encoding="utf-8", newline=None) as f:  # universal newlines, as loom
        for line in f:
            batch.append(line)
            size += len(line.encode("utf-8"))
            if size >= batch_bytes:
                yield batch
                total += size
                batch, size = [], 0
                if max_bytes and total >= max_bytes:
                    return
    if batch:
        yield batch


def main():
    tok_path, text_path = sys.argv[1], sys.argv[2]
    max_bytes = int(float(sys.argv[3]) * 1e6) if len(sys.argv) > 3 else 0
    tok = tokenizers.Tokenizer.from_file(tok_path)
    lines = tokens = nbytes = 0
    w0 = time.perf_counter()
    for batch in batches(text_path, 1 << 20, max_bytes):
        for e in tok.encode_batch(batch, add_special_tokens=False):
            tokens += len(e.ids)
        lines += len(batch)
        nbytes += sum(len(s.encode("utf-8")) for s in batch)
    wall = time.perf_counter() - w0
    print(json.dumps(dict(mb=nbytes / 1e6, lines=lines, tokens=tokens, wall_s=wall,
                          mb_per_s=nbytes / 1e6 / wall,
                          threads=os.environ.get("RAYON_NUM_THREADS", "all"),
                          version=tokenizers.__version__)))


if __name__ == "__main__":
    main()
