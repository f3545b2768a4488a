"""Gradients reach every part: one training step of each generator (its own train(config), stopped
where the step ends) gives every parameter meant to learn a nonzero gradient from the loss, and
none to what must stay frozen: the EMA every evaluation draws with, and JEPA-MaskGIT's target. A
condition detached from the network, or a loss that bypasses a piece of it, leaves that piece
without one.

The network's weights are drawn away from adaLN-Zero's zero start first (a zero gate or head
passes no gradient back: at step 0 most of the network rightly gets none), and the condition
hides factors now and then (--cond dropout), so that the learned nulls are read too."""

import pytest
import torch

import runs

COMMON = ["--steps", "1", "--batch-size", "4", "--width", "16", "--depth", "1", "--heads", "2",
          "--device", "cpu", "--out", "unused-run-folder"]
SHAPES2D = ["--train-per-comp", "2", "--cond", "dropout", "--cond-drop", "0.5"]


class Stepped(Exception):
    """Raised where a training step ends (at its evaluation): its gradients are still in place."""


def one_step(name, *flags):
    """One training step of name's train(config): ({what: module} of the modules meant to learn,
    the same of those meant to stay frozen), holding the gradients the step gave them."""
    module = runs.script(name)
    _, args = module.parse([*COMMON, *(SHAPES2D if name != "objects" else []), *flags])
    learning, frozen = {}, {}
    build = module.build

    def built(config):
        model, tokenizer = build(config)
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0, 0.2)                                # away from the zero start
        learning["network"] = model
        return model, tokenizer

    class Checkpoints(runs.Checkpoints):                 # what the run keeps, named: its parts
        def __init__(self, config, **parts):
            super().__init__(config, **parts)
            frozen.update({key: parts[key] for key in ("ema", "target") if key in parts})
            learning.update({key: parts[key] for key in ("predictors",) if key in parts})

    def stop(*args, **kwargs):
        raise Stepped

    with pytest.MonkeyPatch.context() as patch, torch.random.fork_rng(devices=[]):
        patch.setattr(module, "build", built)
        if name == "maskgit":                     # its train takes the builder as an argument
            patch.setattr(module.train, "__defaults__", (built,))
        patch.setattr(runs, "Checkpoints", Checkpoints)
        patch.setattr(runs, "draw_and_read", stop)
        if name == "objects":                               # its own evaluation
            patch.setattr(module, "draw_and_read", stop)
        with pytest.raises(Stepped):
            module.train(dict(vars(args), model=module.NAME))
    assert "network" in learning, f"{name}: the step trained a network this test did not build"
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


def test_maskgit_factored_one_training_step_reaches_every_parameter():
    reaches_every_part("maskgit_factored")


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
