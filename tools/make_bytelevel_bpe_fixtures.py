#!/usr/bin/env python3
"""Writes tiny Llama-3-style and Qwen2-style byte-level BPE tokenizers and their expected ids.

What it does: the real Llama-3 / Qwen2 tokenizer.json files are several MB, so this trains
tiny ones with `tokenizers` (BpeTrainer over the Austen corpus in assets/ plus the tricky
texts) using exactly the pipeline those files declare:
  pre_tokenizer Sequence[Split(Regex(PATTERN), behavior Isolated, invert false),
                         ByteLevel(add_prefix_space false, trim_offsets true, use_regex false)]
  decoder ByteLevel; model BPE (Llama-3: ignore_merges true)
  Llama-3: no normalizer, post_processor Sequence[ByteLevel(trim_offsets false),
           TemplateProcessing("<|begin_of_text|> $A")], added tokens <|begin_of_text|>,
           <|end_of_text|>, <|eot_id|> ...
  Qwen2: normalizer NFC, post_processor ByteLevel(trim_offsets false), added tokens
         <|endoftext|>, <|im_start|>, <|im_end|>.
The patterns are copied from the published files (meta-llama/Meta-Llama-3-8B and
Qwen/Qwen2-0.5B tokenizer.json). Then it encodes and decodes the text set of
make_tokenizer_fixtures.py (contractions, numbers > 3 digits, CJK, emoji, whitespace runs,
newlines) plus chat-format texts, in the *_cases.json format the C++ fixture test reads.

Assumes: `pip install tokenizers transformers` (checked with tokenizers 0.23).
Run from anywhere: python3 tools/make_bytelevel_bpe_fixtures.py
Output (committed): tests/fixtures/tokenizers/{llama3,qwen2}/tokenizer.json and
{llama3,qwen2}_cases.json.
"""
import glob
import json
import os
import sys

import tokenizers
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tokenizer_fixtures as base  # noqa: E402  (TEXTS, PAIRS, encode_cases, ...)

ROOT = base.ROOT
OUT = base.OUT

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

EXTRA_TEXTS = [
    "In 1234567 years, 98765 numbers: 12 123 1234 12345 0.000001 1e10 3,141,592",
    "He'S SHE'LL we'RE they'VE I'M you'D it'T 's 'S",
    "line one\nline two\r\nline three\n\n\n   indented\n\t\ttabbed  \n",
    "trailing newline spaces   \n   \n",
    "<|begin_of_text|>Hello<|end_of_text|>",
    "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi<|im_end|>",
    "<|endoftext|>tail",
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u6211\u662f\u4e00\u4e2a\u6a21\u578b\u3002",
    "\U0001F600\U0001F600 x\U0001F44D\U0001F3FD!",
    "!!!abc ...def ,ghi \"quoted\" (paren)",
    "cafe\u0301 vs caf\u00e9, \u1100\u1161\u11a8",
]

LLAMA3_SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                  "<|end_header_id|>", "<|eot_id|>"]
QWEN2_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def corpus():
    lines = []
    for path in sorted(glob.glob(os.path.join(ROOT, "assets", "corpora", "**", "*.txt"),
                                 recursive=True))[:2]:
        with open(path, encoding="utf-8") as f:
            lines.extend(f.read()[:200000].split("\n"))
    return lines + base.TEXTS + EXTRA_TEXTS


def split_pre_tokenizer(pattern):
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])


def train(pattern, special, vocab_size, nfc):
    tok = Tokenizer(models.BPE())
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = split_pre_tokenizer(pattern)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[])
    tok.train_from_iterator(corpus(), trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in special])
    return tok


def llama3():
    tok = train(LLAMA3_PATTERN, LLAMA3_SPECIAL, 700, nfc=False)
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        processors.TemplateProcessing(
            single="<|begin_of_text|> $A",
            pair="<|begin_of_text|> $A <|begin_of_text|>:1 $B:1",
            special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    j = json.loads(tok.to_str())
    j["model"]["ignore_merges"] = True  # as in Meta-Llama-3's tokenizer.json
    return Tokenizer.from_str(json.dumps(j))


def qwen2():
    tok = train(QWEN2_PATTERN, QWEN2_SPECIAL, 600, nfc=True)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False,
                                              use_regex=False)
    return tok


def main():
    texts = base.TEXTS + EXTRA_TEXTS
    rnd = base.random_texts(4321, 300)
    for name, tok in (("llama3", llama3()), ("qwen2", qwen2())):
        os.makedirs(os.path.join(OUT, name), exist_ok=True)
        path = os.path.join(OUT, name, "tokenizer.json")
        tok.save(path, pretty=False)
        tok = Tokenizer.from_file(path)
        cases, pair_cases = base.encode_cases(tok, texts, base.PAIRS)
        doc = dict(generator="tools/make_bytelevel_bpe_fixtures.py",
                   tokenizers_version=tokenizers.__version__,
                   vocab_size=tok.get_vocab_size(with_added_tokens=True),
                   cases=cases, pairs=pair_cases,
                   random=dict(seed=4321, texts=rnd, ids=[tok.encode(t).ids for t in rnd]))
        out = os.path.join(OUT, name + "_cases.json")
        with open(out, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=True, separators=(",", ":"))
            f.write("\n")
        print(path, os.path.getsize(path), "bytes;", out, os.path.getsize(out), "bytes")


if __name__ == "__main__":
    main()
