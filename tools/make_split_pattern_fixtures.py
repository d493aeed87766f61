#!/usr/bin/env python3
"""Writes the pieces `tokenizers`' Split pre-tokenizer gives for patterns with empty matches.

What it does: runs pre_tokenizers.Split(Regex(pattern), behavior, invert).pre_tokenize_str
over a few texts for patterns whose matches may be empty (lookahead, lookbehind, `x*`,
anchors, alternations with an empty branch) and non-empty ones, under every behavior and
both invert values, and records each piece as [begin, end) byte offsets of the text. In
`tokenizers` every match, empty or not, is a cut point (find_matches pushes an empty match
as its own segment) and only empty pieces are dropped at the end; the C++ test
ByteLevelSplit.EmptyMatchesCutAsTokenizers checks loom's Split against this file.

Assumes: `pip install tokenizers` (checked with tokenizers 0.23).
Run from anywhere: python3 tools/make_split_pattern_fixtures.py
Output (committed): tests/fixtures/tokenizers/split_patterns.json.
"""
import json
import os

import tokenizers
from tokenizers import Regex, pre_tokenizers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizers", "split_patterns.json")

PATTERNS = [
    r"(?=a)", r"(?<=a)", r"(?=b)|(?<=b)", r"a*", r"b*", r"x?", r"", r"\b", r"^", r"$",
    r"(?<=\s)(?=\S)", r"(?=\p{Lu})", r"a|(?=-)", r"-*", r"a+|", r"\s+(?!\S)", r"-",
    r"a*|-", r"(?<=-)|b+",
    (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
     r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
]
TEXTS = ["aa", "a", "", "a-b", "aab-ba", "--a--", "b", "abba", "  a  b\n c", "HelloWorld Foo",
         "\u00e9a\u65e5\u672ca\U0001F600b", "x-xa-", "bab"]
BEHAVIORS = ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]
JSON_BEHAVIOR = {"removed": "Removed", "isolated": "Isolated",
                 "merged_with_previous": "MergedWithPrevious",
                 "merged_with_next": "MergedWithNext", "contiguous": "Contiguous"}


def byte_offsets(text, start, end):
    return [len(text[:start].encode("utf-8")), len(text[:end].encode("utf-8"))]


def main():
    cases = []
    for pattern in PATTERNS:
        for behavior in BEHAVIORS:
            for invert in (False, True):
                split = pre_tokenizers.Split(Regex(pattern), behavior=behavior, invert=invert)
                for text in TEXTS:
                    pieces = [byte_offsets(text, s, e)
                              for _, (s, e) in split.pre_tokenize_str(text)]
                    cases.append(dict(pattern=pattern, behavior=JSON_BEHAVIOR[behavior],
                                      invert=invert, text=text, pieces=pieces))
    doc = dict(generator="tools/make_split_pattern_fixtures.py",
               tokenizers_version=tokenizers.__version__, cases=cases)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")
    print(OUT, len(cases), "cases,", os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
