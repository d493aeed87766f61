#!/usr/bin/env python3
"""Writes the seed corpus of the libFuzzer harnesses: fuzz/corpus/<target>/seed_*.

What it does: writes a few small, valid inputs per harness (one per format or
code path the harness's first byte selects, see fuzz/fuzz_*.cpp), so libFuzzer
starts from files that get past the first checks. Safetensors seeds are the
committed fixtures written by the `safetensors` library; config seeds are the
committed transformers configs; the rest are hand-written here.
Assumes: Python 3 only (no third-party modules). Run: python3 tools/make_fuzz_corpus.py
Output (committed): fuzz/corpus/. libFuzzer adds what it finds to a scratch
copy (scripts/fuzz.sh), never to these folders.
"""
import json
import os
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def write(target, name, data):
    folder = os.path.join(OUT, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(folder, "seed_" + name), "wb") as f:
        f.write(data)


def byte_level_chars():
    """GPT-2's bytes_to_unicode table (openai/gpt-2 encoder.py), as a list by byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, n = [], 0
    for b in range(256):
        if b in printable:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + n))
            n += 1
    return chars


def bpe_tokenizer_json():
    vocab = {c: i for i, c in enumerate(byte_level_chars())}
    merges = [["t", "h"], ["th", "e"], ["\u0120", "the"], ["a", "n"], ["an", "d"]]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    eot = len(vocab)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": False, "vocab": vocab,
                  "merges": merges},
    }


WORDPIECE_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s", "a", "##b",
                    "cat", ",", ".", "\u4e2d", "##ing", "run", "hello", "world"]


def wordpiece_tokenizer_json():
    special = lambda i, t: {"id": i, "content": t, "single_word": False, "lstrip": False,
                            "rstrip": False, "normalized": False, "special": True}
    return {
        "version": "1.0",
        "truncation": {"direction": "Right", "max_length": 16, "strategy": "LongestFirst",
                       "stride": 0},
        "padding": {"strategy": {"Fixed": 20}, "direction": "Right", "pad_to_multiple_of": None,
                    "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
        "added_tokens": [special(i, t) for i, t in enumerate(WORDPIECE_TOKENS[:5])],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
             "strip_accents": None, "lowercase": True}, {"type": "NFKD"}]},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                                    {"Sequence": {"id": "B", "type_id": 1}},
                                    {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                           "special_tokens": {
                               "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100,
                  "vocab": {t: i for i, t in enumerate(WORDPIECE_TOKENS)}},
    }


def split_tokenizer_json():
    """The BPE seed with Llama-3's pipeline: NFC, Split(Regex) + ByteLevel(use_regex false)."""
    j = bpe_tokenizer_json()
    j["normalizer"] = {"type": "NFC"}
    j["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": (
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?"
            "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")},
         "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]}
    return j


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    for name in ("python_all_dtypes", "python_escapes"):
        with open(os.path.join(FIXTURES, "safetensors", name + ".safetensors"), "rb") as f:
            write("safetensors", name, f.read())
    for model in ("gpt2", "bert", "llama", "qwen2"):
        with open(os.path.join(FIXTURES, "models", model, "config.json"), "rb") as f:
            write("config", model, f.read())
    with open(os.path.join(FIXTURES, "models", "llama", "config.json")) as f:
        llama = json.load(f)
    llama["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
    write("config", "llama_rope_scaling", json.dumps(llama))
    llama.pop("rope_scaling")
    llama["rope_parameters"] = {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}
    write("config", "llama_rope_parameters", json.dumps(llama))
    # io/json_parse.h's nesting limit is 1,000: one seed just inside it, one just past it.
    for depth in (999, 1001):
        write("config", f"depth_{depth}", '{"model_type": "gpt2", "x": ' + "[" * (depth - 1) +
              "]" * (depth - 1) + "}")
        write("tokenizer_json", f"depth_{depth}", '{"model": ' + "[" * (depth - 1) +
              "]" * (depth - 1) + "}")

    for name in ("gpt2_lora", "llama_lora"):
        with open(os.path.join(FIXTURES, "models", name, "adapter_config.json"), "rb") as f:
            write("adapter_config", name, f.read())

    with open(os.path.join(FIXTURES, "models", "gpt2_sharded", "model.safetensors.index.json")) as f:
        index = json.load(f)
    # fuzz_shard_index's scratch directory holds shards with tensors "a" and "b".
    index["weight_map"] = {"a": "model-00001-of-00002.safetensors",
                           "b": "model-00002-of-00002.safetensors"}
    write("shard_index", "two_shards", json.dumps(index, indent=2))
    write("shard_index", "traversal", json.dumps({"weight_map": {"a": "../model.safetensors"}}))

    # fuzz_split_pattern: byte 0 = 1 (Regex) | behavior << 1 | invert << 7, pattern NUL text.
    llama3 = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?"
              "[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
    write("split_pattern", "llama3_isolated", b"\x03" + llama3.encode() + b"\x00Hello, world!  12345\n")
    write("split_pattern", "string_removed", b"\x00" + b"-" + b"\x00a-b--c")
    write("split_pattern", "backtracking", b"\x01" + b"(a+)+$" + b"\x00aaaaaaaaaaaaaaaaaaaa!")
    write("split_pattern", "lookahead_inverted", b"\x87" + b"(?=a)" + b"\x00banana")

    write("tokenizer_json", "bpe", json.dumps(bpe_tokenizer_json(), ensure_ascii=False))
    write("tokenizer_json", "wordpiece", json.dumps(wordpiece_tokenizer_json(), ensure_ascii=False))
    write("tokenizer_json", "bpe_split", json.dumps(split_tokenizer_json(), ensure_ascii=False))

    write("tokenizer_vocab", "vocab_txt", b"\x00" + "\n".join(WORDPIECE_TOKENS).encode() + b"\n")
    bpe = bpe_tokenizer_json()["model"]
    merges_txt = "#version: 0.2\n" + "".join(f"{l} {r}\n" for l, r in bpe["merges"])
    vocab = dict(bpe["vocab"], **{"<|endoftext|>": len(bpe["vocab"])})
    write("tokenizer_vocab", "gpt2_files",
          b"\x01" + json.dumps(vocab, ensure_ascii=False).encode() + b"\x00" + merges_txt.encode())

    write("text_table", "csv", b"\x00" + b'text,label\n"a, ""quoted""\nline",1\nplain,0\n')
    write("text_table", "tsv", b"\x01" + b"sentence1\tsentence2\tlabel\nA cat.\tA dog.\t2\n")
    write("text_table", "jsonl",
          b"\x02" + b'{"text": "hello", "label": 1}\n\n{"text": "w\\u00f6rld", "extra": [1, 2]}\n')
    write("text_table", "text", b"\x03" + "\ufeffone\r\ntwo\rthree\n\nfour".encode())

    flags = ["--model_type", "gpt2", "--config_overrides", "n_layer=2,n_embd=32",
             "--train_file", "a.txt", "--output_dir", "out", "--learning_rate", "3e-4",
             "--max_steps", "10", "--eval_strategy", "steps", "--eval_steps", "5",
             "--lr_scheduler_type", "cosine", "--warmup_ratio", "0.1", "--bf16",
             "--gradient_accumulation_steps=2", "--save_total_limit", "none"]
    write("cli_flags", "command_line", b"\x00" + "\n".join(flags).encode())
    args = {"output_dir": "out", "per_device_train_batch_size": 4, "num_train_epochs": 2.5,
            "save_strategy": "epoch", "eval_strategy": "epoch", "load_best_model_at_end": True,
            "metric_for_best_model": "loss", "max_grad_norm": None, "seed": 7}
    write("cli_flags", "training_args_json", b"\x01" + json.dumps(args).encode())


if __name__ == "__main__":
    main()
