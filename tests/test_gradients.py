"""Gradients reach every part: one training step of each generator (its own train(config), stopped
where the step ends) gives every parameter meant to learn a nonzero gradient from the loss, and
none to what must stay frozen: the EMA every evaluation draws with, and JEPA-MaskGIT's target. A
condition detached from the network, or a loss that bypasses a piece of it, leaves that piece
without one.

The network's weights are drawn away from adaLN-Zero's zero start first (a zero gate or head
passes no gradient back: at step 0 most of the network rightly gets none), and the condition
hides factors now and then (--cond dropout), so that the learned nulls are read too."""
import copy
import importlib
import types

import pytest
import torch

import runs

COMMON = ["--steps", "1", "--batch-size", "4", "--width", "16", "--depth", "1", "--heads", "2",
          "--device", "cpu", "--out", "unused-run-folder"]
SHAPES2D = ["--train-per-comp", "2", "--cond", "dropout", "--cond-drop", "0.5"]


class Stepped(Exception):
    """Raised where a training step ends (runs.check_finite): its gradients are still in place."""


def one_step(name, *flags):
    """One training step of name's train(config): ({what: module} of the modules meant to learn,
    the same of those meant to stay frozen), holding the gradients the step gave them."""
    module = importlib.import_module(name)
    _, args = module.parse([*COMMON, *(SHAPES2D if name != "objects" else []), *flags])
    learning, frozen = {}, {}
    build, ema_copy = module.build, runs.ema_copy

    def built(config):
        model, tokenizer = build(config)
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0, 0.2)                                # away from the zero start
        learning["network"] = model
        return model, tokenizer

    def copied(model):
        frozen["ema"] = ema_copy(model)
        return frozen["ema"]

    def stop(loss, step, out):
        raise Stepped

    with pytest.MonkeyPatch.context() as patch, torch.random.fork_rng(devices=[]):
        patch.setattr(module, "build", built)
        patch.setattr(runs, "ema_copy", copied)
        patch.setattr(runs, "check_finite", stop)
        if name == "jepa_maskgit":                   # the target: a copy of the EMA; the predictors
            def deepcopy(thing):
                frozen["target"] = copy.deepcopy(thing)
                return frozen["target"]
            make = module.make_predictors

            def made(*args):
                learning["predictors"] = make(*args)
                return learning["predictors"]
            patch.setattr(module, "copy", types.SimpleNamespace(deepcopy=deepcopy))
            patch.setattr(module, "make_predictors", made)
        with pytest.raises(Stepped):
            module.train(dict(vars(args), model=module.MODEL))
    return learning, frozen


def reaches_every_part(name, *flags):
    learning, frozen = one_step(name, *flags)
    none = [f"{what}.{n}" for what, part in learning.items() for n, p in part.named_parameters()
            if p.grad is None or not p.grad.abs().sum() > 0]
    assert not none, f"{name}: the loss gives {len(none)} parameters no gradient: {none[:6]}"
    leaked = [f"{what}.{n}" for what, part in frozen.items() for n, p in part.named_parameters()
              if p.grad is not None and p.grad.abs().sum() > 0]
    assert not leaked, f"{name}: what must stay frozen got a gradient: {leaked[:5]}"
    assert set(frozen) == ({"ema", "target"} if name == "jepa_maskgit" else {"ema"}), frozen


def test_maskgit_one_training_step_reaches_every_parameter_and_no_frozen_one():
    reaches_every_part("maskgit")


def test_maskgit_factored_head_one_training_step_reaches_every_parameter():
    reaches_every_part("maskgit", "--factored-head")


def test_jepa_maskgit_one_training_step_reaches_every_parameter_but_the_target_and_the_ema():
    reaches_every_part("jepa_maskgit", "--jepa-layers", "0")


def test_givt_one_training_step_reaches_every_parameter_and_no_frozen_one():
    reaches_every_part("givt")


def test_mar_one_training_step_reaches_every_parameter_and_no_frozen_one():
    """The diffusion head trains on z; z must carry the gradient back into the transformer."""
    reaches_every_part("mar")


def test_dit_one_training_step_reaches_every_parameter_and_no_frozen_one():
    reaches_every_part("dit")


def test_ar_one_training_step_reaches_every_parameter_and_no_frozen_one():
    reaches_every_part("ar")
    reaches_every_part("ar", "--head", "gmm")


@pytest.mark.parametrize("locality", ["global", "local", "patch"])
def test_objects_one_training_step_reaches_every_parameter_and_no_frozen_one(locality):
    reaches_every_part("objects", "--locality", locality)
