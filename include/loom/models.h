// Pretrained transformer models, everything at once: the base class and
// from_pretrained (loom/pretrained_model.h), the task interfaces
// (loom/causal_lm.h, masked_lm.h, sequence_classifier.h), the model classes (loom/gpt2.h,
// loom/bert.h, loom/llama.h) and the registry that maps config.json to them
// (loom/model_registry.h). See loom/pretrained_model.h for an example.
#pragma once

#include "loom/bert.h"
#include "loom/causal_lm.h"
#include "loom/gpt2.h"
#include "loom/llama.h"
#include "loom/lora.h"
#include "loom/masked_lm.h"
#include "loom/model_registry.h"
#include "loom/pretrained_model.h"
#include "loom/sequence_classifier.h"
