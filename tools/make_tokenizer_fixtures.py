#!/usr/bin/env python3
"""Writes the tokenizer fixtures in tests/fixtures/tokenizers/ from the real libraries.

What it does: builds the GPT-2 tokenizer from assets/tokenizers/gpt2/{vocab.json,merges.txt}
and the BERT uncased tokenizer from assets/tokenizers/bert-base-uncased/vocab.txt with
transformers (GPT2Tokenizer / BertTokenizer.from_pretrained on those folders, which is what a
user of transformers gets from such a folder), saves their `tokenizer.json` files, and encodes
and decodes a varied text set with the `tokenizers` library loaded from those very files. It
also writes "variants": the same tokenizer with one pipeline component replaced (another
post-processor, normalizer, added tokens, truncation/padding in the file), given as the JSON
fields to replace, and their expected outputs.

Assumes: `pip install tokenizers transformers` (checked with tokenizers 0.23, transformers 5.x).
Run from anywhere: python3 tools/make_tokenizer_fixtures.py
Output (committed): tests/fixtures/tokenizers/{gpt2,bert}/tokenizer.json, {gpt2,bert}_cases.json,
and bpe_options.json: small BPE tokenizers trained by `tokenizers` with each BPE model option
(unk_token, fuse_unk, byte_fallback, continuing_subword_prefix, end_of_word_suffix,
ignore_merges) and their encodings. `--only bpe_options` writes just that file.
Offsets in the fixtures are character offsets, as the Python binding reports them; the C++ test
converts loom's byte offsets with the same rule before comparing.
"""
import argparse
import json
import os
import random
import shutil
import tempfile

import tokenizers
import transformers
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSETS = os.path.join(ROOT, "assets", "tokenizers")
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizers")

AUSTEN = (
    "It is a truth universally acknowledged, that a single man in possession of a good "
    "fortune, must be in want of a wife. However little known the feelings or views of such "
    "a man may be on his first entering a neighbourhood, this truth is so well fixed in the "
    "minds of the surrounding families, that he is considered the rightful property of some "
    "one or other of their daughters.\n\n\"My dear Mr. Bennet,\" said his lady to him one day, "
    "\"have you heard that Netherfield Park is let at last?\""
)

TEXTS = [
    # English prose
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    AUSTEN,
    "Mr. Darcy's pride--and Elizabeth's prejudice; who could say which was worse?",
    # code
    "def square(x):\n    return x ** 2  # squares x\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }\n\treturn sum;",
    '{"key": [1, 2.5, null], "nested": {"a": true}}',
    "#include <vector>\nstd::vector<int> v{1,2,3}; // C++20",
    "x=>x*2 && y||z != w >= 3 <<= 7 ...",
    # emoji and ZWJ sequences
    "I \u2764\ufe0f \U0001F980 and \U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466 family",
    "\U0001F3F3\ufe0f\u200D\U0001F308 \U0001F44D\U0001F3FD \U0001F600\U0001F601\U0001F602",
    "\U0001F970\U0001F916\U0001F9E0 emoji",
    # CJK
    "\u4e2d\u6587\u5206\u8bcd\u6d4b\u8bd5\uff0c\u4f60\u597d\u4e16\u754c\uff01",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002\u30ab\u30bf\u30ab\u30ca",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
    "\U00020000\U0002A700 \U0002B820\U0002B91F\U0002B920 \uF900\u3400",
    # accents (composed and decomposed)
    "H\u00e9llo w\u00f6rld caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m S\u00e3o Paulo",
    "cafe\u0301 Zu\u0308rich n\u0303",
    "Z\u0324\u0354\u0367\u0311\u0313a\u0308\u0356\u032d\u0308\u0307l",
    # Cyrillic, Greek, other scripts
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u0421\u044a\u0435\u0448\u044c "
    "\u0436\u0435 \u0435\u0449\u0451 \u044d\u0442\u0438\u0445 \u043c\u044f\u0433\u043a\u0438\u0445.",
    "\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3 \u1f40\u03b4\u03c5\u03c3\u03c3\u03b5\u03cd\u03c2",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a",
    "\u0130stanbul \u0131\u0131 \u01c5 \u216b \u24b6",
    # whitespace runs
    "a    b\t\tc\n\n\nd   \n  e",
    "   leading spaces",
    "trailing spaces   ",
    " ",
    "\n",
    "\t \n \r\n",
    "  ",
    "word\n\nword\r\nword",
    "a\u00a0b\u3000c\u2028d\u2003e\u2028\u2028\u2028f \u00a0 g\u0085h\u1680i",
    # digits
    "12345 3.14159 1,000,000 2024-01-01 007",
    "\u0663\u0664\u0665 \u00bd \u00b2 \u2167 \uff11\uff12",
    "Call 555-0123 or +1 (800) 555 0199",
    # apostrophes and contractions
    "I'm you're he's we've they'll I'd can't won't 'quoted' O'Neil",
    "IT'S HE'LL I'M 'S 's 'twas rock'n'roll",
    "\u2019s don\u2019t \u2018single\u2019 \u201cdouble\u201d",
    "''' '' 'x 'll",
    # empty
    "",
    # very long words
    "a" * 300,
    "supercalifragilisticexpialidocious" * 8,
    "x" * 150 + " short",
    "ab" * 60,
    "\u00e9" * 120,
    "!" * 40 + "?" * 10,
    # control chars
    "a\x00b\x01c\x7fd\u200be\ufefff\u00adg",
    "tab\x0bvt\x0cff\x1cfs\x1fus",
    "\ufffd replacement \ufffd",
    "\ue000 private use \U000F0000",
    # punctuation and symbols
    "\u00abquotes\u00bb \u2014 dash \u2026 ellipsis \u00bfQu\u00e9? \u00a1Hola!",
    "\u2211 x\u00b2 \u2264 \u221e \u00a7 \u00b6 \u00a9 \u00ae \u2122 $100 \u20ac50 \u00a3",
    "https://example.com/path?q=1&r=2 user@example.org",
    "!!!???... ---- ==== ____ ****",
    # special tokens inside text
    "Hello<|endoftext|>world",
    "<|endoftext|>",
    "a <|endoftext|> b<|endoftext|><|endoftext|>c",
    "<|endoftext|",
    "[CLS] the [MASK] sat on the mat [SEP] [PAD]",
    "x[UNK]y[cls] [MASK][MASK]",
    "[SEP",
]

PAIRS = [
    ["How old are you?", "I'm 6 years old."],
    ["", "only the second"],
    ["only the first", ""],
    ["The quick brown fox jumps over the lazy dog.", "short"],
    ["caf\u00e9 \u4e2d\u6587", "\u041f\u0440\u0438\u0432\u0435\u0442 [SEP] mir"],
]

# Truncation/padding runs through the tokenizers API: (name, truncation kwargs, padding kwargs,
# batch, is_pair).
BATCH = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "a",
    "",
    "Mr. Darcy's pride--and Elizabeth's prejudice; who could say which was worse?",
]
PAIR_BATCH = [PAIRS[0], PAIRS[3], ["a b c d e f g h i j k l", "m n o p q r s t u v w x y z"]]
LONG_FIRST = [["a b c d e f g h i j k l", "m n"], [PAIRS[3][0], "short"]]
LONG_SECOND = [[b, a] for a, b in LONG_FIRST]


def set_padding(tok, name, pad_id, pad_token, kwargs):
    if kwargs is None:
        tok.no_padding()
    else:
        tok.enable_padding(pad_id=pad_id, pad_token=pad_token, **kwargs)


def run_batches(tok, pad_id, pad_token):
    runs = []
    configs = [
        ("trunc8_longest", dict(max_length=8), None, BATCH),
        ("trunc8_left", dict(max_length=8, direction="left"), None, BATCH),
        ("pad_longest", None, dict(), BATCH),
        ("pad_longest_mult8", None, dict(pad_to_multiple_of=8), BATCH),
        ("pad_fixed24_left", None, dict(length=24, direction="left"), BATCH),
        ("trunc6_pad_mult4", dict(max_length=6), dict(pad_to_multiple_of=4), BATCH),
        ("pair_trunc10_longest", dict(max_length=10), None, PAIR_BATCH),
        ("pair_trunc3_longest", dict(max_length=3), None, PAIR_BATCH),
        ("pair_trunc8_only_first", dict(max_length=8, strategy="only_first"), None, LONG_FIRST),
        ("pair_trunc8_only_second", dict(max_length=8, strategy="only_second", direction="left"),
         None, LONG_SECOND),
        ("pair_trunc8_only_first_too_short", dict(max_length=8, strategy="only_first"), None,
         LONG_SECOND),
        ("pair_trunc9_pad", dict(max_length=9), dict(pad_to_multiple_of=4, pad_type_id=1),
         PAIR_BATCH),
    ]
    for name, trunc, pad, inputs in configs:
        is_pair = isinstance(inputs[0], list)
        for add_special in (True, False):
            t = Tokenizer.from_str(tok.to_str())
            if trunc is not None:
                t.enable_truncation(**trunc)
            set_padding(t, name, pad_id, pad_token, pad)
            try:
                encs = t.encode_batch([tuple(p) for p in inputs] if is_pair else inputs,
                                      add_special_tokens=add_special)
            except Exception as e:  # e.g. only_first cannot truncate enough
                runs.append(dict(name=name, add_special_tokens=add_special, error=str(e)))
                continue
            runs.append(dict(
                name=name, add_special_tokens=add_special,
                truncation=trunc, padding=pad, inputs=inputs,
                ids=[e.ids for e in encs], type_ids=[e.type_ids for e in encs],
                attention_mask=[e.attention_mask for e in encs],
                special_tokens_mask=[e.special_tokens_mask for e in encs]))
    return runs


def encode_cases(tok, texts, pairs, with_offsets=True):
    cases = []
    for text in texts:
        case = dict(text=text)
        for add_special in (True, False):
            e = tok.encode(text, add_special_tokens=add_special)
            key = "special" if add_special else "plain"
            case[key] = dict(ids=e.ids, type_ids=e.type_ids, attention_mask=e.attention_mask,
                             special_tokens_mask=e.special_tokens_mask)
            if with_offsets:
                case[key]["offsets"] = [list(o) for o in e.offsets]
        ids = case["special"]["ids"]
        case["decode"] = tok.decode(ids, skip_special_tokens=False)
        case["decode_skip"] = tok.decode(ids, skip_special_tokens=True)
        cases.append(case)
    pair_cases = []
    for a, b in pairs:
        case = dict(a=a, b=b)
        for add_special in (True, False):
            e = tok.encode(a, b, add_special_tokens=add_special)
            key = "special" if add_special else "plain"
            case[key] = dict(ids=e.ids, type_ids=e.type_ids, attention_mask=e.attention_mask,
                             special_tokens_mask=e.special_tokens_mask,
                             sequence_ids=[-1 if s is None else s for s in e.sequence_ids])
            if with_offsets:
                case[key]["offsets"] = [list(o) for o in e.offsets]
        pair_cases.append(case)
    return cases, pair_cases


def variant(base_json, name, replace, texts, pairs, extra_setup=None):
    j = json.loads(base_json)
    for k, v in replace.items():
        j[k] = v
    tok = Tokenizer.from_str(json.dumps(j))
    cases, pair_cases = encode_cases(tok, texts, pairs)
    return dict(name=name, replace=replace, cases=cases, pairs=pair_cases)


def vocab_ids_check(hf_tok, tok, texts):
    """The transformers object built from the folder must agree with the tokenizers object."""
    for text in texts:
        a = hf_tok(text)["input_ids"]
        b = tok.encode(text).ids
        assert a == b, (text, a, b)


def random_texts(seed, n):
    """Random strings drawn from a mix of scripts, used for bulk id checks."""
    rng = random.Random(seed)
    pools = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "0123456789", " \t\n", ".,;:!?'\"()[]{}<>-_/\\@#$%^&*+=|~`",
        "\u00e9\u00e8\u00fc\u00f1\u00e7\u00c5\u00df", "\u4e2d\u6587\u5b57\u6d4b\u8bd5",
        "\u043f\u0440\u0438\u0432\u0435\u0442", "\U0001F600\U0001F980\u200d\u2764",
        "\u0301\u0308\u0327", "\u00a0\u3000\u2028",
    ]
    out = []
    for _ in range(n):
        k = rng.randint(0, 40)
        s = "".join(rng.choice(rng.choice(pools)) for _ in range(k))
        if rng.random() < 0.1:
            s += rng.choice(["<|endoftext|>", "[CLS]", "[MASK]", "'s", "'ll"])
        out.append(s)
    return out


# --- BPE model options ---------------------------------------------------------------------
# A lowercase corpus: the trained vocabularies have no capitals, digits or non-ASCII letters,
# so texts with those exercise unk_token / fuse_unk / byte_fallback.
BPE_CORPUS = [
    "the cat sat on the mat and the hat",
    "a rat ate the oat cake at the lake",
    "that cat hates hats; the rats eat cake",
    "late at night the bat sat on a gate",
] * 4

BPE_TEXTS = [
    "the cat sat",
    "that hat and the rat",
    "cake lake gate late",
    "thecatsat",
    "The Cat SAT",
    "cat99 rat7 x",
    "zzz qqq",
    "caf\u00e9 na\u00efve \u4e2d\u6587",
    "emoji \U0001F600 here",
    "a  b   c\td\ne",
    "hello",
    "hellothe",
    "",
    "!!! ;;; ?",
]


def bpe_trained(prefix=None, suffix=None):
    """tokenizer.json (as a dict) of a BPE trained on BPE_CORPUS, WhitespaceSplit pre-tokens."""
    kwargs = dict(vocab_size=80, special_tokens=["[UNK]"], show_progress=False)
    model_kwargs = dict(unk_token="[UNK]")
    if prefix is not None:
        kwargs["continuing_subword_prefix"] = prefix
        model_kwargs["continuing_subword_prefix"] = prefix
    if suffix is not None:
        kwargs["end_of_word_suffix"] = suffix
        model_kwargs["end_of_word_suffix"] = suffix
    tok = Tokenizer(models.BPE(**model_kwargs))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator(BPE_CORPUS, trainers.BpeTrainer(**kwargs))
    return json.loads(tok.to_str())


def bpe_case(name, j, options, texts=BPE_TEXTS, extra_vocab=()):
    """Sets model options (and appends tokens to the vocabulary), then encodes `texts`."""
    model = j["model"]
    for token in extra_vocab:
        if token not in model["vocab"]:
            model["vocab"][token] = len(model["vocab"])
    model.update(options)
    tok = Tokenizer.from_str(json.dumps(j))
    cases = []
    for text in texts:
        e = tok.encode(text, add_special_tokens=False)
        cases.append(dict(text=text, ids=e.ids, tokens=e.tokens,
                          offsets=[list(o) for o in e.offsets]))
    return dict(name=name, options=options, tokenizer=tok.to_str(), cases=cases)


def bpe_option_cases():
    all_bytes = ["<0x%02X>" % b for b in range(256)]
    ascii_bytes = ["<0x%02X>" % b for b in range(128)]
    # "hello" is not reachable by the trained merges: only ignore_merges finds it whole.
    whole = ["hello"]
    return [
        bpe_case("unk", bpe_trained(), {"unk_token": "[UNK]", "fuse_unk": False}),
        bpe_case("unk_fused", bpe_trained(), {"unk_token": "[UNK]", "fuse_unk": True}),
        bpe_case("no_unk_token", bpe_trained(), {"unk_token": None}),
        bpe_case("byte_fallback", bpe_trained(), {"byte_fallback": True}, extra_vocab=all_bytes),
        bpe_case("byte_fallback_ascii_only_fused", bpe_trained(),
                 {"byte_fallback": True, "fuse_unk": True}, extra_vocab=ascii_bytes),
        bpe_case("continuing_subword_prefix", bpe_trained(prefix="##"), {}),
        bpe_case("continuing_subword_prefix_fused_unk", bpe_trained(prefix="##"),
                 {"fuse_unk": True}),
        bpe_case("end_of_word_suffix", bpe_trained(suffix="</w>"), {}),
        bpe_case("prefix_and_suffix", bpe_trained(prefix="##", suffix="</w>"), {}),
        bpe_case("ignore_merges", bpe_trained(), {"ignore_merges": True}, extra_vocab=whole),
        bpe_case("merges_not_ignored", bpe_trained(), {"ignore_merges": False},
                 extra_vocab=whole),
    ]


def write_bpe_options():
    doc = dict(generator="tools/make_tokenizer_fixtures.py",
               tokenizers_version=tokenizers.__version__, tokenizers=bpe_option_cases())
    path = os.path.join(OUT, "bpe_options.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")
    print(path, os.path.getsize(path), "bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=["bpe_options"], help="write only this fixture")
    if parser.parse_args().only == "bpe_options":
        write_bpe_options()
        return
    write_bpe_options()
    os.makedirs(os.path.join(OUT, "gpt2"), exist_ok=True)
    os.makedirs(os.path.join(OUT, "bert"), exist_ok=True)
    tmp = tempfile.mkdtemp()
    try:
        gdir = os.path.join(tmp, "gpt2")
        bdir = os.path.join(tmp, "bert")
        shutil.copytree(os.path.join(ASSETS, "gpt2"), gdir)
        shutil.copytree(os.path.join(ASSETS, "bert-base-uncased"), bdir)
        hf_gpt2 = transformers.GPT2Tokenizer.from_pretrained(gdir)
        hf_bert = transformers.BertTokenizer.from_pretrained(bdir)
    finally:
        shutil.rmtree(tmp)
    hf_gpt2.backend_tokenizer.save(os.path.join(OUT, "gpt2", "tokenizer.json"), pretty=False)
    hf_bert.backend_tokenizer.save(os.path.join(OUT, "bert", "tokenizer.json"), pretty=False)
    gpt2 = Tokenizer.from_file(os.path.join(OUT, "gpt2", "tokenizer.json"))
    bert = Tokenizer.from_file(os.path.join(OUT, "bert", "tokenizer.json"))
    rnd = random_texts(1234, 300)
    vocab_ids_check(hf_gpt2, gpt2, TEXTS + rnd)
    vocab_ids_check(hf_bert, bert, TEXTS + rnd)
    gj, bj = gpt2.to_str(), bert.to_str()

    def special_roles(hf):
        return {k: getattr(hf, k) for k in
                ("unk_token", "bos_token", "eos_token", "pad_token", "cls_token", "sep_token",
                 "mask_token")}

    added = json.loads(bj)["added_tokens"] + [
        dict(id=30522, content="Yesterday", single_word=False, lstrip=False, rstrip=False,
             normalized=True, special=False),
        dict(id=30523, content="<ent>", single_word=False, lstrip=True, rstrip=True,
             normalized=False, special=True),
        dict(id=30524, content="solo", single_word=True, lstrip=False, rstrip=False,
             normalized=False, special=False),
    ]
    added_texts = ["I read a book yesterday; YESTERDAY too.", "x <ent> y  <ent>  z<ent>w",
                   "solo solos so solo, (solo) resolo solo", "Yesterday<ent>solo"]
    gpt2_added = json.loads(gj)["added_tokens"] + [
        dict(id=50257, content="<mask>", single_word=False, lstrip=True, rstrip=False,
             normalized=False, special=True),
        dict(id=50258, content=" extra", single_word=False, lstrip=False, rstrip=False,
             normalized=True, special=False),
    ]
    gpt2_added_texts = ["The <mask> sat.   <mask>x<mask>", "an extra word, extra  extra"]

    some = TEXTS[:12] + TEXTS[20:40] + TEXTS[54:]
    gpt2_variants = [
        variant(gj, "bytelevel_postprocessor",
                {"post_processor": {"type": "ByteLevel", "add_prefix_space": False,
                                    "trim_offsets": False, "use_regex": True}}, some, PAIRS),
        variant(gj, "bytelevel_trim_offsets",
                {"post_processor": {"type": "ByteLevel", "add_prefix_space": False,
                                    "trim_offsets": True, "use_regex": True}}, some, PAIRS),
        variant(gj, "roberta_prefix_space",
                {"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True,
                                   "trim_offsets": True, "use_regex": True},
                 "post_processor": {"type": "RobertaProcessing", "sep": ["<|endoftext|>", 50256],
                                    "cls": ["<|endoftext|>", 50256], "trim_offsets": True,
                                    "add_prefix_space": True},
                 "added_tokens": gpt2_added},
                some + gpt2_added_texts, PAIRS),
        variant(gj, "bos_eos_template",
                {"post_processor": {
                    "type": "TemplateProcessing",
                    "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                               {"Sequence": {"id": "A", "type_id": 0}},
                               {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
                    "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                             {"SpecialToken": {"id": "<|endoftext|>", "type_id": 1}},
                             {"Sequence": {"id": "B", "type_id": 1}}],
                    "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [50256],
                                                         "tokens": ["<|endoftext|>"]}}}},
                some[:10], PAIRS),
        variant(gj, "no_post_processor_no_decoder", {"post_processor": None, "decoder": None},
                some[:10], PAIRS),
    ]
    bert_variants = [
        variant(bj, "bert_processing",
                {"post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 102],
                                    "cls": ["[CLS]", 101]}}, some, PAIRS),
        variant(bj, "cased_keep_accents",
                {"normalizer": {"type": "BertNormalizer", "clean_text": True,
                                "handle_chinese_chars": False, "strip_accents": None,
                                "lowercase": False}}, TEXTS, PAIRS),
        variant(bj, "lowercase_keep_accents",
                {"normalizer": {"type": "BertNormalizer", "clean_text": False,
                                "handle_chinese_chars": True, "strip_accents": False,
                                "lowercase": True}}, TEXTS, PAIRS),
        variant(bj, "sequence_normalizer",
                {"normalizer": {"type": "Sequence", "normalizers": [
                    {"type": "NFD"}, {"type": "Lowercase"}, {"type": "StripAccents"}]},
                 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                     {"type": "WhitespaceSplit"}, {"type": "BertPreTokenizer"}]}},
                TEXTS, PAIRS),
        variant(bj, "added_tokens", {"added_tokens": added}, TEXTS[:10] + added_texts, PAIRS),
        variant(bj, "wordpiece_decoder_no_cleanup",
                {"decoder": {"type": "WordPiece", "prefix": "##", "cleanup": False}},
                TEXTS[:12], []),
    ]
    # Settings stored in the file itself.
    for base, variants, pad_id, pad_tok in ((gj, gpt2_variants, 50256, "<|endoftext|>"),
                                            (bj, bert_variants, 0, "[PAD]")):
        j = json.loads(base)
        j["truncation"] = {"direction": "Right", "max_length": 7, "strategy": "LongestFirst",
                           "stride": 0}
        j["padding"] = {"strategy": {"Fixed": 9}, "direction": "Right", "pad_to_multiple_of": None,
                        "pad_id": pad_id, "pad_type_id": 0, "pad_token": pad_tok}
        t = Tokenizer.from_str(json.dumps(j))
        cases, pair_cases = encode_cases(t, TEXTS[:8], PAIRS)
        variants.append(dict(name="file_truncation_padding",
                             replace={"truncation": j["truncation"], "padding": j["padding"]},
                             cases=cases, pairs=pair_cases))

    for name, tok, hf, variants, pad_id, pad_tok in (
            ("gpt2", gpt2, hf_gpt2, gpt2_variants, 50256, "<|endoftext|>"),
            ("bert", bert, hf_bert, bert_variants, 0, "[PAD]")):
        cases, pair_cases = encode_cases(tok, TEXTS, PAIRS)
        rnd_ids = [tok.encode(t).ids for t in rnd]
        doc = dict(
            generator="tools/make_tokenizer_fixtures.py",
            tokenizers_version=tokenizers.__version__,
            transformers_version=transformers.__version__,
            special_tokens=special_roles(hf),
            vocab_size=tok.get_vocab_size(with_added_tokens=True),
            cases=cases, pairs=pair_cases,
            batches=run_batches(tok, pad_id, pad_tok),
            random=dict(seed=1234, texts=rnd, ids=rnd_ids),
            variants=variants)
        path = os.path.join(OUT, name + "_cases.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=True, separators=(",", ":"))
            f.write("\n")
        print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
