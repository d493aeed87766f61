"""loom.AutoTokenizer: a tokenizer directory (tokenizer.json, or GPT-2 / BERT
vocabulary files) loaded by loom's C++ tokenizer, with the small part of
transformers' tokenizer interface a training script uses:

    tok = loom.AutoTokenizer.from_pretrained("assets/tokenizers/gpt2")
    tok(["Hello world"])["input_ids"]     # [[15496, 995]]
    tok.decode([15496, 995])              # "Hello world"

``from_pretrained`` takes a local directory or a hub id in the local Hugging
Face cache (loom never downloads); LoomError otherwise.
"""

import os
import shutil

from loom import _core

# The files transformers' tokenizers read; save_pretrained copies those present.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                    "vocab.json", "merges.txt", "vocab.txt", "added_tokens.json",
                    "chat_template.jinja")


class PreTrainedTokenizer:
    """A loaded tokenizer; ``name_or_path`` is its directory."""

    def __init__(self, directory):
        self.name_or_path = directory
        self._tok = _core.Tokenizer.from_pretrained(directory)

    def __call__(self, text, add_special_tokens=True, **kwargs):
        """``{"input_ids": ..., "attention_mask": ...}`` for a str or a list of str
        (no padding or truncation; other keywords raise LoomError)."""
        if kwargs:
            raise _core.LoomError(f"[AutoTokenizer] unsupported arguments: {sorted(kwargs)}")
        single = isinstance(text, str)
        ids = self._tok.encode_batch([text] if single else list(text), add_special_tokens)
        masks = [[1] * len(row) for row in ids]
        if single:
            return {"input_ids": ids[0], "attention_mask": masks[0]}
        return {"input_ids": ids, "attention_mask": masks}

    def encode(self, text, add_special_tokens=True):
        return self._tok.encode_batch([text], add_special_tokens)[0]

    def decode(self, ids, skip_special_tokens=False):
        return self._tok.decode([int(i) for i in ids], skip_special_tokens)

    def __len__(self):
        return self._tok.vocab_size

    @property
    def vocab_size(self):
        return self._tok.vocab_size

    @property
    def pad_token_id(self):
        return self._tok.pad_token_id

    @property
    def eos_token_id(self):
        return self._tok.eos_token_id

    @property
    def bos_token_id(self):
        return self._tok.bos_token_id

    def save_pretrained(self, save_directory):
        """Copies the tokenizer files of its directory into ``save_directory``."""
        os.makedirs(save_directory, exist_ok=True)
        for name in _TOKENIZER_FILES:
            src = os.path.join(self.name_or_path, name)
            if os.path.isfile(src):
                shutil.copyfile(src, os.path.join(save_directory, name))
        return save_directory


class AutoTokenizer:
    """transformers' AutoTokenizer name: ``from_pretrained(dir_or_id)``."""

    def __init__(self):
        raise TypeError("AutoTokenizer is built with from_pretrained()")

    @staticmethod
    def from_pretrained(pretrained_model_name_or_path, revision="main", **kwargs):
        directory = _core.resolve_model_dir(os.fspath(pretrained_model_name_or_path), revision)
        return PreTrainedTokenizer(directory)
