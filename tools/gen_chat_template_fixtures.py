#!/usr/bin/env python3
"""Writes tests/fixtures/chat_templates/*.json: what transformers renders, for loom's chat
template engine (src/data/chat_template/) to match byte for byte.

- <template>.json for every template in ../shared/data/chat_templates/: a set of conversations
  (system and no system, multi-turn, add_generation_prompt true and false, tools where the
  template has them, Qwen3 reasoning) rendered by transformers' own rendering function,
  `render_jinja_template` (what `apply_chat_template` calls), after the message
  normalisation apply_chat_template does (`_normalize_chat_messages`). A conversation the
  template refuses records the error instead.
- constructs.json: one small template per Jinja construct, rendered by the same environment
  (`_compile_jinja_template`: ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop
  controls, transformers' globals and tojson); failures record the exception.
- generation.json: a template with `{% generation %}` rendered and tokenized by
  `apply_chat_template(..., return_assistant_tokens_mask=True)` with the real Qwen2 tokenizer
  (../shared/data/tokenizers/qwen2/tokenizer.json): text, generation ranges, ids, mask.

strftime_now is fixed to 2025-03-14 12:00 local time (the tests fix loom's clock the same).
Ranges are converted from Python character offsets to UTF-8 byte offsets.

Usage (no torch needed):
  python3 -m venv /tmp/chatvenv && /tmp/chatvenv/bin/pip install transformers jinja2
  /tmp/chatvenv/bin/python tools/gen_chat_template_fixtures.py
"""
import datetime as _dt
import json
import os
import sys

import transformers
import transformers.utils.chat_template_utils as ctu
from transformers import PreTrainedTokenizerFast

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared", "data")
if not os.path.isdir(SHARED):
    SHARED = "/work/shared/data"
OUT = os.path.join(ROOT, "tests", "fixtures", "chat_templates")
FIXED_NOW = _dt.datetime(2025, 3, 14, 12, 0, 0)


class _FixedDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW


ctu.datetime = _FixedDatetime  # strftime_now reads the module's `datetime` when called


def byte_ranges(text, ranges):
    return [[len(text[:b].encode()), len(text[:e].encode())] for b, e in ranges]


def render(template, messages, tools, add_generation_prompt, variables):
    conversation = ctu._normalize_chat_messages(messages)
    rendered, indices = ctu.render_jinja_template(
        conversations=[conversation], tools=tools, chat_template=template,
        return_assistant_tokens_mask=True, add_generation_prompt=add_generation_prompt, **variables)
    return rendered[0], byte_ranges(rendered[0], indices[0])


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}

SYS = {"role": "system", "content": "You are a terse assistant. /no_think"}
U1 = {"role": "user", "content": "What is 2+2?"}
A1 = {"role": "assistant", "content": "4."}
U2 = {"role": "user", "content": "  And in words, with \"quotes\" and é 中文 🙂?  "}
A2 = {"role": "assistant", "content": "Four.\nThat's it."}

CONVERSATIONS = [
    ("single_user", [U1], None),
    ("system_user", [SYS, U1], None),
    ("multi_turn", [U1, A1, U2, A2], None),
    ("system_multi_turn", [SYS, U1, A1, U2], None),
    ("assistant_last", [SYS, U1, A1], None),
    ("empty_system", [{"role": "system", "content": ""}, U1], None),
]

TOOL_CALL_ASSISTANT = {
    "role": "assistant", "content": "",
    "tool_calls": [{"id": "call12345", "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}],
}
TOOL_RESULT = {"role": "tool", "tool_call_id": "call12345", "content": "{\"temperature\": 21}"}
TOOL_CONVERSATIONS = [
    ("tools_user", [U1], [WEATHER_TOOL]),
    ("tools_system_user", [SYS, {"role": "user", "content": "Weather in Paris?"}], [WEATHER_TOOL]),
    ("tools_call_and_result", [{"role": "user", "content": "Weather in Paris?"}, TOOL_CALL_ASSISTANT,
                               TOOL_RESULT, {"role": "assistant", "content": "21 C."}], [WEATHER_TOOL]),
]
REASONING_CONVERSATIONS = [
    ("think_in_content", [U1, {"role": "assistant", "content": "<think>\nEasy sum.\n</think>\n\n4."}, U2], None),
    ("think_last_turn", [U1, {"role": "assistant", "content": "<think>\nEasy sum.\n</think>\n\n4."}], None),
    ("reasoning_content_field", [U1, {"role": "assistant", "content": "4.", "reasoning_content": "Add them."}], None),
    ("none_field_dropped", [U1, {"role": "assistant", "content": "4.", "tool_calls": None}], None),
]

TEMPLATE_VARIABLES = {
    "HuggingFaceTB-SmolLM3-3B": {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"},
    "Qwen-Qwen2.5-7B-Instruct": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "Qwen-Qwen3-0.6B": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "google-gemma-2-2b-it": {"bos_token": "<bos>", "eos_token": "<eos>"},
    "meta-llama-Llama-3.2-3B-Instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "microsoft-Phi-3.5-mini-instruct": {"bos_token": "<s>", "eos_token": "<|endoftext|>"},
    "mistralai-Mistral-Nemo-Instruct-2407": {"bos_token": "<s>", "eos_token": "</s>"},
}


def template_cases(stem, template):
    cases = []
    convs = list(CONVERSATIONS) + list(REASONING_CONVERSATIONS)
    if "tools" in template:
        convs += TOOL_CONVERSATIONS
    extra_vars = [{}]
    if "enable_thinking" in template:
        extra_vars.append({"enable_thinking": False})
    for name, messages, tools in convs:
        for agp in (False, True):
            for ev in extra_vars:
                variables = dict(TEMPLATE_VARIABLES[stem], **ev)
                case = {"name": name + ("_gen" if agp else "") + ("_nothink" if ev else ""),
                        "messages": messages, "tools": tools, "add_generation_prompt": agp,
                        "variables": variables}
                try:
                    case["expected"], _ = render(template, messages, tools, agp, variables)
                except Exception as e:  # the template refuses this conversation
                    case["error"] = str(e)
                cases.append(case)
    return cases


# One template per construct: (name, template, context).
CONSTRUCTS = [
    ("text_only", "Hello\nworld", {}),
    ("output_string", "{{ 'a' }}{{ \"b\" }}{{ 'x' 'y' }}", {}),
    ("output_none_bool_number", "{{ none }}|{{ true }}|{{ False }}|{{ 3 }}|{{ 2.5 }}|{{ 1.0 }}|{{ 1e20 }}|{{ 0.0001 }}|{{ 1e-5 }}", {}),
    ("output_list_dict", "{{ [1, 'a', none, true] }} {{ {'k': 'v', 'n': 1} }} {{ x }}", {"x": {"a": [1, 2.5, "it's"]}}),
    ("undefined_prints_empty", "[{{ nope }}][{{ d.missing }}]", {"d": {}}),
    ("undefined_falsy", "{% if nope %}y{% else %}n{% endif %}{% if not d.missing %}!{% endif %}", {"d": {}}),
    ("if_elif_else", "{% for x in [1, 2, 3, 4] %}{% if x == 1 %}one{% elif x == 2 %}two{% elif x > 3 %}big{% else %}other{% endif %},{% endfor %}", {}),
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", {}),
    ("for_previtem_nextitem", "{% for x in [1, 2, 3] %}({{ loop.previtem }}<{{ x }}<{{ loop.nextitem }}){% endfor %}", {}),
    ("for_cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}{% for x in none_list %}y{% else %}undef{% endfor %}", {}),
    ("for_filter", "{% for x in [1, 2, 3, 4, 5] if x is odd %}{{ x }}{{ loop.index }}{{ loop.last }} {% endfor %}", {}),
    ("for_tuple_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k, v in d | items %}{{ k }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_dict_keys", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"z": 1, "y": 2}}),
    ("for_scope", "{% set x = 'outer' %}{% for i in [1, 2] %}{{ x }}{% set x = 'inner' %}{{ x }}{% endfor %}{{ x }}", {}),
    ("break_continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("set_and_tuple", "{% set a, b = 1, 2 %}{% set c = (3, 4) %}{{ a }}{{ b }}{{ c[1] }}{% set s %}block {{ a }}{% endset %}[{{ s }}]", {}),
    ("namespace", "{% set ns = namespace(n=0, found=false) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.n }} {{ ns.found }}", {}),
    ("namespace_empty_then_set", "{% set ns = namespace() %}{% set ns.index = 0 %}{% set ns.index = ns.index + 1 %}{{ ns.index }}", {}),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', '?') }} {{ greet(name='Cy', punct='.') }}", {}),
    ("whitespace_dash", "a  {{- ' b ' -}}  c\n  {%- if true -%}  d  {%- endif -%}  \ne", {}),
    ("trim_blocks", "{% if true %}\nline1\n{% endif %}\nline2\n{# comment #}\nline3", {}),
    ("lstrip_blocks", "start\n    {% if true %}\n    kept\n    {% endif %}\n  {{ 'var keeps indent' }}\nend", {}),
    ("lstrip_plus_disables", "x\n    {%+ if true %}y{% endif %}\n", {}),
    ("trailing_newline_dropped", "a\n", {}),
    ("comment_dash", "a  {#- gone -#}  b", {}),
    ("raw_block", "{% raw %}{{ not evaluated }}{% endraw %}", {}),
    ("string_methods", "{{ '  ab  '.strip() }}|{{ 'xxabxx'.strip('x') }}|{{ '\\n\\nab'.lstrip('\\n') }}|{{ 'ab  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'aXbXc'.replace('X', '-') }}|{{ 'Hello'.upper() }}{{ 'Hello'.lower() }}|{{ 'hello big world'.title() }}|{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}{{ 'abc'.startswith('c') }}|{{ 'hello'.capitalize() }}", {}),
    ("split_index", "{{ s.split('</think>')[-1].lstrip('\\n') }}|{{ s.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}", {"s": "<think>\nhmm\n</think>\n\nanswer"}),
    ("slicing", "{{ [1, 2, 3, 4][::-1] }}{{ [1, 2, 3, 4][1:] }}{{ [1, 2, 3, 4][:-1] }}{{ [1, 2, 3, 4][::2] }}{{ 'héllo'[1:3] }}{{ 'abc'[::-1] }}{{ [1, 2, 3][-1] }}{{ 'abcdef'[-2:] }}", {}),
    ("tilde_concat", "{{ 1 ~ 'a' ~ none ~ true ~ nope }}", {}),
    ("arithmetic", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 1.5 + 1 }} {{ 'ab' * 2 }} {{ [1] + [2] }} {{ -3 }} {{ 10 - 2 - 3 }}", {}),
    ("comparisons", "{{ 1 < 2 }}{{ 2 <= 2 }}{{ 'a' < 'b' }}{{ 1 == 1.0 }}{{ 1 != 2 }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ [1, 2] == [1, 2] }}{{ {'a': 1} == {'a': 1} }}{{ true == 1 }}", {}),
    ("in_not_in", "{{ 'b' in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in d }}{{ 'z' not in d }}{{ 3 not in [1, 2] }}{{ 'x' in nope }}", {"d": {"k": 1}}),
    ("and_or_not_values", "{{ 0 or 'x' }}|{{ 'a' and 'b' }}|{{ '' and 'b' }}|{{ not 0 }}|{{ not [1] }}|{{ none or [] }}", {}),
    ("inline_if", "{{ 'y' if true else 'n' }}{{ 'y' if false else 'n' }}[{{ 'y' if false }}]", {}),
    ("is_not", "{{ x is not none }}{{ y is not none }}{{ x is not defined }}{{ nope is not defined }}", {"x": 1, "y": None}),
    ("tests_types", "{{ 's' is string }}{{ 1 is string }}{{ d is mapping }}{{ l is mapping }}{{ l is iterable }}{{ 's' is iterable }}{{ 1 is iterable }}{{ l is sequence }}{{ d is sequence }}{{ 1 is number }}{{ 1.5 is number }}{{ true is boolean }}{{ 1 is boolean }}{{ false is false }}{{ 0 is false }}{{ true is true }}{{ none is none }}{{ nope is undefined }}{{ 3 is divisibleby 3 }}{{ 4 is even }}{{ 4 is odd }}{{ 1 is integer }}{{ 1.0 is float }}", {"d": {}, "l": []}),
    ("tests_compare", "{{ 2 is eq 2 }}{{ 2 is equalto 3 }}{{ 2 is ne 3 }}{{ 2 is lt 3 }}{{ 2 is gt 3 }}{{ 1 is in [1] }}{{ 'A' is upper }}{{ 'a' is lower }}", {}),
    ("filter_length_count", "{{ [1, 2] | length }}{{ 'héllo' | length }}{{ d | length }}{{ 'ab' | count }}", {"d": {"a": 1}}),
    ("filter_trim", "[{{ '  x  ' | trim }}][{{ 'xxyxx' | trim('x') }}]", {}),
    ("filter_tojson", "{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ 'é\"\\n' | tojson }}|{{ [] | tojson }}|{{ {} | tojson(indent=4) }}|{{ d | tojson(sort_keys=true) }}|{{ 1.5 | tojson }}|{{ none | tojson }}", {"d": {"b": [1, 2.0, True, None], "a": {"x": "y"}, "c": []}}),
    ("filter_items_join", "{{ d | items | list }}|{{ ['a', 'b'] | join(', ') }}|{{ [1, 2] | join }}|{{ users | join(',', attribute='name') }}", {"d": {"a": 1}, "users": [{"name": "x"}, {"name": "y"}]}),
    ("filter_string_int_float", "{{ 12 | string }}{{ '42' | int + 1 }}{{ 'x' | int }}{{ '3.7' | int }}{{ 3.9 | int }}{{ '2.5' | float }}{{ none | string }}", {}),
    ("filter_default", "{{ nope | default('dflt') }}|{{ '' | default('e') }}|{{ '' | default('e', true) }}|{{ x | d('no') }}", {"x": "yes"}),
    ("filter_first_last_list_reverse", "{{ [1, 2, 3] | first }}{{ [1, 2, 3] | last }}{{ 'abc' | list }}{{ [1, 2] | reverse | list }}{{ 'abc' | reverse }}{{ 'abc' | first }}", {}),
    ("filter_select_reject_attr", "{{ ms | selectattr('role', 'equalto', 'user') | list | length }}|{{ ms | rejectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}|{{ ms | selectattr('tool') | list | length }}|{{ [1, 2, 3, 4] | select('even') | list }}|{{ [1, 2, 3] | reject('odd') | list }}", {"ms": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "tool": True}, {"role": "user", "content": "c"}]}),
    ("filter_map_filter", "{{ ['a', 'b'] | map('upper') | join }}{{ [' a ', 'b '] | map('trim') | list }}", {}),
    ("filter_case_replace", "{{ 'ab' | upper }}{{ 'AB' | lower }}{{ 'a b' | title }}{{ 'abc' | replace('b', 'X') }}{{ 'ab' | capitalize }}", {}),
    ("filter_sort", "{{ [3, 1, 2] | sort }}{{ ['b', 'A', 'c'] | sort }}{{ [3, 1, 2] | sort(reverse=true) }}{{ us | sort(attribute='n') | map(attribute='n') | list }}", {"us": [{"n": 2}, {"n": 1}]}),
    ("filter_abs_precedence", "{{ -3 | abs }}{{ '\\n' + ' x ' | trim + '!' }}{{ [1, 2] | length - 1 }}", {}),
    ("dict_methods", "{{ d.get('a') }}{{ d.get('z', 'dz') }}{{ d.get('z') }}{{ d.keys() | list }}{{ d.values() | list }}{{ d['a'] }}{{ d.a }}", {"d": {"a": 1, "b": 2}}),
    ("attribute_vs_item", "{{ m.role }}{{ m['role'] }}{{ m.content.content is defined }}{{ l[0].x }}{{ l.0.x }}", {"m": {"role": "user", "content": "hi"}, "l": [{"x": 5}]}),
    ("set_overrides_context", "{% set messages = messages[1:] %}{{ messages | length }}{% for m in messages %}{{ m }}{% endfor %}", {"messages": ["a", "b", "c"]}),
    ("globals_strftime_raise_defined", "{{ strftime_now('%d %b %Y') }}{{ strftime_now is defined }}{{ raise_exception is defined }}{{ dict(a=1) }}", {}),
    ("list_dict_literals", "{{ [] }}{{ [1,] }}{{ {'a': 1, 'b': [2]}['b'][0] }}{{ (1, 2) }}{{ () }}", {}),
    ("escapes_in_strings", "{{ 'tab\\there' }}|{{ \"q\\\"uote\" }}|{{ 'it\\'s' }}|{{ 'uni\\u00e9' }}", {}),
    ("generation_block", "{% for m in messages %}{% if m.role == 'assistant' %}A: {% generation %}{{ m.content }}!{% endgeneration %}\n{% else %}U: {{ m.content }}\n{% endif %}{% endfor %}", {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "héllo"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}),
    # Errors: Jinja refuses these (the C++ tests check loom names the template and line).
    ("error_raise_exception", "line1\n{{ raise_exception('Bad roles!') }}", {}),
    ("error_attribute_of_undefined", "a\nb\n{{ nope.attr }}", {}),
    ("error_add_str_int", "{{ 'a' + 1 }}", {}),
    ("error_add_undefined", "{{ 'a' + nope }}", {}),
    ("error_unknown_filter", "x\n{{ 1 | frobnicate }}", {}),
    ("error_unknown_tag", "{% frobnicate %}", {}),
    ("error_unclosed_if", "{% if true %}x", {}),
    ("error_list_append_sandbox", "{{ l.append(1) }}", {"l": []}),
    ("error_namespace_underscore", "{% set ns = namespace(_x=1) %}", {}),
    ("error_call_undefined", "{{ nope() }}", {}),
]


def render_construct(template, context):
    compiled = ctu._compile_jinja_template(template)
    blocks, indices = [], []
    with compiled.environment.activate_tracker(blocks, indices):
        for block in compiled.generate(**context):
            blocks.append(block)
        text = "".join(blocks)
    return text, byte_ranges(text, indices)


def constructs():
    out = []
    for name, template, context in CONSTRUCTS:
        case = {"name": name, "template": template, "context": context}
        try:
            case["expected"], case["generation"] = render_construct(template, context)
        except Exception as e:
            case["error"] = type(e).__name__ + ": " + str(e)
        if name.startswith("error_") != ("error" in case):
            sys.exit(f"construct {name}: expected {'an error' if name.startswith('error_') else 'success'}, got {case}")
        out.append(case)
    return out


GENERATION_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' %}{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{% else %}{{ message['content'] + '<|im_end|>' }}{% endif %}{{ '\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def generation_fixture():
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(SHARED, "tokenizers", "qwen2", "tokenizer.json"))
    cases = []
    for name, messages in [("two_turns", [U1, A1, U2, A2]), ("unicode_assistant", [U1, {"role": "assistant", "content": "é 中文 🙂 done"}])]:
        out = tok.apply_chat_template(messages, chat_template=GENERATION_TEMPLATE, tokenize=True, return_dict=True,
                                      return_assistant_tokens_mask=True)
        text, ranges = render(GENERATION_TEMPLATE, messages, None, False, {})
        cases.append({"name": name, "messages": messages, "expected": text, "generation": ranges,
                      "ids": list(out["input_ids"]), "assistant_masks": list(out["assistant_masks"])})
    return {"template": GENERATION_TEMPLATE, "tokenizer": "tokenizers/qwen2/tokenizer.json", "cases": cases}


def write(name, obj):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    meta = {"transformers": transformers.__version__, "jinja2": __import__("jinja2").__version__,
            "now": FIXED_NOW.isoformat()}
    tdir = os.path.join(SHARED, "chat_templates")
    for fname in sorted(os.listdir(tdir)):
        if not fname.endswith(".jinja"):
            continue
        stem = fname[: -len(".jinja")]
        with open(os.path.join(tdir, fname), encoding="utf-8") as f:
            template = f.read()
        write(stem + ".json", dict(meta, template=fname, cases=template_cases(stem, template)))
    write("constructs.json", dict(meta, cases=constructs()))
    write("generation.json", dict(meta, **generation_fixture()))


if __name__ == "__main__":
    main()
