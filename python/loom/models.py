"""transformers' AutoModel names over loom's model registry.

    model = loom.AutoModelForCausalLM.from_pretrained("path/to/gpt2", device="lazy")
    model = loom.AutoModelForCausalLM.from_config({"model_type": "gpt2", "n_layer": 2})
    out = model(input_ids=ids, labels=ids)      # ids: an int64 loom tensor [B, T]
    out.loss.backward(); optimizer.step(); optimizer.zero_grad()
    loom.lazy.mark_step()

``from_pretrained`` takes a local directory (config.json + safetensors; the
class config.json's "architectures" names). ``from_config`` takes a dict
with "model_type" (or anything with ``to_dict()``, as a transformers config),
fills the rest from transformers' defaults of that type and initializes at
random from loom's generator (``loom.manual_seed``). Both raise LoomError for
an unknown type, a class that does not serve the task, or a bad config.
"""

import json
import os

from loom import _core


class _AutoModel:
    _task = ""  # the registry's task name; "" = the base model

    def __init__(self):
        raise TypeError(f"{type(self).__name__} is built with from_pretrained() or from_config()")

    @classmethod
    def from_pretrained(cls, path, device="cpu"):
        model = _core.auto_from_pretrained(os.fspath(path), device)
        if cls._task and not _core.serves_task(model, cls._task):
            raise _core.LoomError(f"[{cls.__name__}] {path}: {model.architecture} is not a "
                                  f"{cls._task} model")
        return model

    @classmethod
    def from_config(cls, config, device="cpu", **overrides):
        values = dict(config.to_dict() if hasattr(config, "to_dict") else config)
        values.update(overrides)
        model_type = values.get("model_type")
        if not model_type:
            raise _core.LoomError(f"[{cls.__name__}] from_config: the config has no model_type")
        merged = json.loads(_core.default_config_json(model_type))
        merged.update(values)
        return _core.from_config(model_type, cls._task, json.dumps(merged), device)


class AutoModel(_AutoModel):
    """The base model of a type (GPT2Model, BertModel, ...)."""


class AutoModelForCausalLM(_AutoModel):
    """A causal language model (GPT2LMHeadModel, LlamaForCausalLM, Qwen2ForCausalLM, ...)."""
    _task = "causal-lm"


class AutoModelForMaskedLM(_AutoModel):
    """A masked language model (BertForMaskedLM)."""
    _task = "masked-lm"


class AutoModelForSequenceClassification(_AutoModel):
    """A sequence classifier (BertForSequenceClassification, ...)."""
    _task = "text-classification"


class PretrainedConfig(dict):
    """A model config as a dict with attribute access (transformers'
    PretrainedConfig names: ``to_dict()``, ``update_from_string()``,
    ``save_pretrained()``); ``AutoModelFor*.from_config`` takes it."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value

    def to_dict(self):
        return dict(self)

    def update_from_string(self, update_str):
        """"n_embd=10,n_layer=2": each value parsed as the existing field's type."""
        for pair in filter(None, update_str.split(",")):
            key, sep, text = pair.partition("=")
            if not sep or key not in self:
                raise _core.LoomError(f"[config_overrides] key {key} isn't in the original config")
            old = self[key]
            if isinstance(old, bool):
                value = text.lower() in ("true", "1", "y", "yes")
            elif isinstance(old, int):
                value = int(text)
            elif isinstance(old, float):
                value = float(text)
            else:
                value = text
            self[key] = value

    def save_pretrained(self, save_directory):
        os.makedirs(save_directory, exist_ok=True)
        with open(os.path.join(save_directory, "config.json"), "w", encoding="utf-8") as f:
            json.dump(dict(self), f, indent=2, sort_keys=True)


class AutoConfig:
    """transformers' AutoConfig: ``from_pretrained(dir_or_id)`` reads config.json;
    ``for_model(model_type, **kwargs)`` gives the type's defaults with kwargs."""

    def __init__(self):
        raise TypeError("AutoConfig is built with from_pretrained() or for_model()")

    @staticmethod
    def from_pretrained(pretrained_model_name_or_path, revision="main", **kwargs):
        directory = _core.resolve_model_dir(os.fspath(pretrained_model_name_or_path), revision)
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
            config = PretrainedConfig(json.load(f))
        config.update(kwargs)
        return config

    @staticmethod
    def for_model(model_type, **kwargs):
        config = PretrainedConfig(json.loads(_core.default_config_json(model_type)))
        config.update(kwargs)
        return config
