"""loom: lazy-tensor training of Transformer models, from Python.

The C++ library does the work (the extension module ``loom._core``); this
package is a thin layer over it with NumPy's, PyTorch's and the Hugging Face
Trainer's names (docs/python.md):

    import numpy as np, loom
    x = loom.tensor(np.ones((2, 3), np.float32), device="lazy")
    y = (x * 2.0).sum()
    loom.lazy.mark_step()            # compile once, run; cached afterwards
    print(y.item(), loom.lazy.counter_value("MarkStep"))

Errors a user can cause raise ``loom.LoomError`` (a ``ValueError``) with the
C++ message unchanged.
"""

from importlib import metadata as _metadata

from loom import _plugin

_plugin.name_cpu_plugin()  # before the extension loads: lazy:xla's plugin from this venv

from loom._core import SGD, AdamW, LoomError, Tensor, from_dlpack, manual_seed
from loom import lazy
from loom.tensor import tensor, from_numpy, float32, bfloat16, float16, int32, int64, bool_
from loom.training_args import TrainingArguments
from loom.models import (AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM,
                         AutoModelForSequenceClassification, AutoConfig)
from loom.tokenizer import AutoTokenizer, PreTrainedTokenizer
from loom.trainer_callback import (EvalPrediction, TrainerCallback, TrainerControl,
                                   TrainerState)
from loom.data import (DataCollatorForLanguageModeling, DataCollatorWithPadding,
                       default_data_collator)
from loom.trainer import PredictionOutput, Trainer, TrainOutput, get_last_checkpoint
from loom.sft import LoraConfig, SFTConfig, SFTTrainer
from loom.hf_argparser import HfArgumentParser, set_seed

try:  # the wheel's version: CMakeLists.txt's project(loom VERSION ...)
    __version__ = _metadata.version("loom")
except _metadata.PackageNotFoundError:
    __version__ = "unknown"

__all__ = [
    "AdamW",
    "AutoConfig",
    "AutoModel",
    "AutoModelForCausalLM",
    "AutoModelForMaskedLM",
    "AutoModelForSequenceClassification",
    "AutoTokenizer",
    "DataCollatorForLanguageModeling",
    "DataCollatorWithPadding",
    "EvalPrediction",
    "HfArgumentParser",
    "LoraConfig",
    "PreTrainedTokenizer",
    "PredictionOutput",
    "SFTConfig",
    "SFTTrainer",
    "TrainOutput",
    "Trainer",
    "TrainerCallback",
    "TrainerControl",
    "TrainerState",
    "SGD",
    "LoomError",
    "Tensor",
    "TrainingArguments",
    "bfloat16",
    "bool_",
    "default_data_collator",
    "get_last_checkpoint",
    "float16",
    "float32",
    "from_dlpack",
    "from_numpy",
    "int32",
    "int64",
    "lazy",
    "manual_seed",
    "set_seed",
    "tensor",
]
