#!/usr/bin/env python3
"""Writes tests/fixtures/optim/*.json: torch.optim and transformers' values for
loom's optimizers, gradient clipping, LR schedules and weight-decay grouping,
read by tests/optim/*_test.cpp.

Assumes PyTorch and transformers from PyPI (`pip install torch transformers`);
CPU is enough. PyTorch runs single-threaded so the values do not depend on
the machine's thread count.

  python3 tools/make_optim_fixtures.py     # (re)writes tests/fixtures/optim/

Files (all floats are f32 values written as JSON numbers, exact in double):
  optimizers.json  {"torch": version, "cases": [{"name", "optimizer": "AdamW"|"SGD",
                   "groups": [{"options": {...}, "params": [{"shape", "init"}]}],
                   "lrs": [[lr of each group] per step],
                   "steps": [{"grads": [[...] per param, null = no grad],
                              "params": [[...] per param after the step]}],
                   "state": [{"<buffer>": [...]} per param after the last step]}]}
                   Params are numbered across groups in order (torch's state_dict
                   numbering). Before step s each group's lr is set to lrs[s].
  clip.json        {"cases": [{"max_norm", "norm_type", "grads": [[...]], "shapes",
                   "total_norm", "clipped": [[...]]}]}
  schedules.json   {"transformers": version, "base_lr", "cases": [{"name", "kwargs",
                   "lrs": [get_last_lr()[0] after construction and after each step]}]}
  decay_names.json {"models": [{"model", "names": [named_parameters()],
                   "decay": [Trainer.get_decay_parameter_names]}]}
"""
import json
import math
import pathlib

import torch
import transformers
from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, Trainer
from transformers.optimization import get_scheduler

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "optim"


def flat(t):
    return [float(x) for x in t.detach().reshape(-1).tolist()]


def make_params(gen, shapes):
    return [torch.randn(s, generator=gen, dtype=torch.float32) for s in shapes]


def optimizer_case(name, kind, groups_spec, lrs, grad_mask, seed, grad_scale=1.0):
    """groups_spec: [(options, [shapes])]; grad_mask[s][i] False = param i has no grad at step s.
    Gradients are standard normal times grad_scale."""
    gen = torch.Generator().manual_seed(seed)
    groups, case_groups = [], []
    for options, shapes in groups_spec:
        params = [p.requires_grad_() for p in make_params(gen, shapes)]
        groups.append(dict(options, params=params))
        case_groups.append({"options": options,
                            "params": [{"shape": list(p.shape), "init": flat(p)} for p in params]})
    if kind == "AdamW":
        opt = torch.optim.AdamW(groups, foreach=False)
    else:
        opt = torch.optim.SGD(groups, foreach=False)
    all_params = [p for g in opt.param_groups for p in g["params"]]
    steps = []
    for s, step_lrs in enumerate(lrs):
        for g, lr in zip(opt.param_groups, step_lrs):
            g["lr"] = lr
        grads = []
        for i, p in enumerate(all_params):
            if grad_mask[s][i]:
                p.grad = torch.randn(p.shape, generator=gen, dtype=torch.float32) * grad_scale
                grads.append(flat(p.grad))
            else:
                p.grad = None
                grads.append(None)
        opt.step()
        steps.append({"grads": grads, "params": [flat(p) for p in all_params]})
    state = []
    for p in all_params:
        st = opt.state.get(p, {})
        state.append({k: flat(v) for k, v in st.items()
                      if k != "step" and isinstance(v, torch.Tensor)})
    return {"name": name, "optimizer": kind, "groups": case_groups, "lrs": lrs,
            "steps": steps, "state": state}


def optimizer_cases():
    shapes_a = [[3, 4], [4]]
    shapes_b = [[2, 3]]
    all_grads = [[True] * 3] * 4
    lrs2 = [[1e-2, 5e-3], [2e-2, 1e-2], [0.0, 0.0], [3e-2, 7e-3]]
    return [
        optimizer_case("adamw_two_groups", "AdamW",
                       [({"lr": 1e-2, "weight_decay": 0.1, "betas": [0.9, 0.999], "eps": 1e-8},
                         shapes_a),
                        ({"lr": 5e-3, "weight_decay": 0.0, "betas": [0.8, 0.95], "eps": 1e-6},
                         shapes_b)],
                       lrs2, all_grads, 1),
        optimizer_case("adamw_skip_grad", "AdamW",
                       [({"lr": 1e-1, "weight_decay": 0.01, "betas": [0.9, 0.999], "eps": 1e-8},
                         shapes_a + shapes_b)],
                       [[1e-1]] * 4,
                       [[True, True, True], [True, False, True], [False, True, True],
                        [True, True, False]], 2),
        optimizer_case("adamw_beta1_large_weight", "AdamW",
                       [({"lr": 3e-2, "weight_decay": 0.0, "betas": [0.3, 0.9], "eps": 1e-8},
                         shapes_a)],
                       [[3e-2]] * 3, [[True, True]] * 3, 3),
        # eps matters: gradients ~1e-4 against eps 1e-3, so sqrt(v_hat) ~ |g| is far
        # below eps and the update depends on where eps sits. torch adds it after the
        # bias correction (sqrt(v) / sqrt(bc2) + eps); TensorFlow's placement
        # ((sqrt(v) + eps) / sqrt(bc2)) changes the first steps' updates by up to 30x.
        optimizer_case("adamw_eps_matters", "AdamW",
                       [({"lr": 1e-2, "weight_decay": 0.0, "betas": [0.9, 0.999], "eps": 1e-3},
                         shapes_a),
                        ({"lr": 1e-2, "weight_decay": 0.1, "betas": [0.5, 0.99], "eps": 1e-4},
                         shapes_b)],
                       [[1e-2, 1e-2]] * 5, [[True] * 3] * 5, 7, grad_scale=1e-4),
        optimizer_case("sgd_momentum_dampening", "SGD",
                       [({"lr": 1e-1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.0,
                          "nesterov": False}, shapes_a),
                        ({"lr": 5e-2, "momentum": 0.5, "dampening": 0.0, "weight_decay": 0.01,
                          "nesterov": True}, shapes_b)],
                       [[1e-1, 5e-2], [2e-1, 5e-2], [1e-1, 0.0], [5e-2, 1e-1]], all_grads, 4),
        optimizer_case("sgd_plain", "SGD",
                       [({"lr": 1e-1, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.1,
                          "nesterov": False}, shapes_a)],
                       [[1e-1]] * 3, [[True, True]] * 3, 5),
        optimizer_case("sgd_skip_grad", "SGD",
                       [({"lr": 1e-1, "momentum": 0.9, "dampening": 0.0, "weight_decay": 0.0,
                          "nesterov": False}, shapes_a)],
                       [[1e-1]] * 4, [[True, False], [True, True], [False, True], [True, True]],
                       6),
    ]


def clip_cases():
    cases = []
    for i, (max_norm, norm_type, scale) in enumerate(
            [(1.0, 2.0, 1.0), (100.0, 2.0, 1.0), (0.5, 2.0, 3.0), (1.0, float("inf"), 1.0),
             (2.0, 3.0, 1.0)]):
        gen = torch.Generator().manual_seed(100 + i)
        shapes = [[3, 4], [4], [2, 2, 2]]
        grads = [torch.randn(s, generator=gen) * scale for s in shapes]
        params = [torch.zeros(s, requires_grad=True) for s in shapes]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type,
                                               foreach=False)
        cases.append({"max_norm": max_norm,
                      "norm_type": "inf" if math.isinf(norm_type) else norm_type,
                      "shapes": shapes, "grads": [flat(g) for g in grads],
                      "total_norm": float(total), "clipped": [flat(p.grad) for p in params]})
    return {"cases": cases}


def schedule_cases():
    base_lr = 1e-3
    specs = [
        ("constant", {}),
        ("constant_with_warmup", {"num_warmup_steps": 4}),
        ("linear", {"num_warmup_steps": 3, "num_training_steps": 12}),
        ("linear", {"num_warmup_steps": 0, "num_training_steps": 10}),
        ("cosine", {"num_warmup_steps": 2, "num_training_steps": 12}),
        ("cosine", {"num_warmup_steps": 2, "num_training_steps": 12,
                    "scheduler_specific_kwargs": {"num_cycles": 1.5}}),
        ("cosine_with_restarts", {"num_warmup_steps": 2, "num_training_steps": 14,
                                  "scheduler_specific_kwargs": {"num_cycles": 3}}),
        ("cosine_with_restarts", {"num_warmup_steps": 0, "num_training_steps": 10}),
        ("polynomial", {"num_warmup_steps": 2, "num_training_steps": 10}),
        ("polynomial", {"num_warmup_steps": 3, "num_training_steps": 11,
                        "scheduler_specific_kwargs": {"lr_end": 1e-4, "power": 2.0}}),
        ("inverse_sqrt", {"num_warmup_steps": 3}),
        ("inverse_sqrt", {"num_warmup_steps": 2,
                          "scheduler_specific_kwargs": {"timescale": 5}}),
        ("inverse_sqrt", {"num_warmup_steps": 0}),
    ]
    cases = []
    for name, kwargs in specs:
        p = torch.zeros(1, requires_grad=True)
        opt = torch.optim.AdamW([p], lr=base_lr)
        sched = get_scheduler(name, opt, **kwargs)
        lrs = [sched.get_last_lr()[0]]
        for _ in range(16):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr()[0])
        cases.append({"name": name, "kwargs": kwargs, "lrs": lrs})
    return {"transformers": transformers.__version__, "base_lr": base_lr, "cases": cases}


def decay_names():
    models = []
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=8, n_head=2, vocab_size=16,
                                      n_positions=8, bos_token_id=0,
                                      eos_token_id=0))
    bert = BertForMaskedLM(BertConfig(num_hidden_layers=2, hidden_size=8, num_attention_heads=2,
                                      intermediate_size=16, vocab_size=16,
                                      max_position_embeddings=8))
    for label, model in [("gpt2", gpt2), ("bert", bert)]:
        # The Trainer's own method; it does not use `self`, so no Trainer is built.
        decay = Trainer.get_decay_parameter_names(None, model)
        names = [n for n, _ in model.named_parameters()]
        models.append({"model": label, "names": names,
                       "decay": [n for n in names if n in decay]})
    return {"transformers": transformers.__version__, "models": models}


def write(name, obj):
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / name).write_text(json.dumps(obj, indent=None, separators=(",", ":")) + "\n")


def main():
    torch.set_num_threads(1)
    write("optimizers.json", {"torch": torch.__version__, "cases": optimizer_cases()})
    write("clip.json", clip_cases())
    write("schedules.json", schedule_cases())
    write("decay_names.json", decay_names())


if __name__ == "__main__":
    main()
