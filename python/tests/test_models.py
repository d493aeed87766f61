"""Models and optimizers from Python: model(input_ids=..., labels=...) gives
.loss and .logits, loss.backward(), an AdamW step and mark_step() train a
tiny GPT-2; the lazy device gives the eager device's losses; errors."""

import numpy as np
import pytest

import loom

CONFIG = {"model_type": "gpt2", "n_layer": 1, "n_embd": 16, "n_head": 2, "n_positions": 32,
          "vocab_size": 64}


def train_losses(device, steps=4):
    loom.manual_seed(0)
    model = loom.AutoModelForCausalLM.from_config(CONFIG, device=device)
    model.train()
    opt = loom.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    ids_np = np.random.default_rng(0).integers(0, 64, size=(2, 12))
    ids = loom.tensor(ids_np, device=device)
    losses = []
    for _ in range(steps):
        out = model(input_ids=ids, labels=ids)
        assert out.logits.shape == (2, 12, 64)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        loom.lazy.mark_step()
        losses.append(out.loss.item())
    return losses


def test_tiny_gpt2_trains_and_lazy_matches_eager():
    eager = train_losses("cpu")
    assert abs(eager[0] - np.log(64)) < 0.3  # near-uniform predictions at init
    assert eager[-1] < eager[0] - 0.1, eager
    loom.lazy.clear_all()
    lazy = train_losses("lazy")
    np.testing.assert_allclose(lazy, eager, rtol=2e-4)
    assert loom.lazy.counter_value("MarkStep") == 4
    assert loom.lazy.counter_value("CachedCompile") >= 2  # later steps reuse the executable


def test_model_surface():
    model = loom.AutoModelForCausalLM.from_config(CONFIG)
    assert model.architecture == "GPT2LMHeadModel"
    names = [n for n, _ in model.named_parameters()]
    assert "transformer.wte.weight" in names
    assert model.num_parameters() == sum(int(np.prod(p.shape)) for p in model.parameters())
    out = model(input_ids=loom.tensor([[1, 2, 3]]))
    assert out.loss is None and out.logits.shape == (1, 3, 64)


def test_errors():
    with pytest.raises(loom.LoomError, match="no model_type"):
        loom.AutoModelForCausalLM.from_config({"n_layer": 1})
    with pytest.raises(loom.LoomError, match="nosuchtype"):
        loom.AutoModelForCausalLM.from_config({"model_type": "nosuchtype"})
    with pytest.raises(TypeError):
        loom.AutoModelForCausalLM()
