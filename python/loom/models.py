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
