import json

import numpy as np
import pytest
import torch

import data
import jepa_maskgit
import maskgit
import scripts
from scripts import FAST, ONCE


def small(vocab=64):
    torch.manual_seed(0)
    model = maskgit.MaskGIT(vocab, width=64, depth=4, heads=4)
    target = maskgit.MaskGIT(vocab, width=64, depth=4, heads=4)
    target.load_state_dict(model.state_dict())
    target.requires_grad_(False)
    return model, target, jepa_maskgit.make_predictors(64, [2, 3])


def batch(n=8, vocab=64):
    ids = torch.randint(vocab, (n, 64), generator=torch.Generator().manual_seed(0))
    latents = data.sample_latents([[0, 0, 1]] * n, np.random.default_rng(0))
    return (ids, *data.conditioning(latents, "continuous", train=False))


def test_target_gets_no_gradient():
    """Under stop-gradient, even a target whose weights would take a gradient gets none."""
    model, target, predictors = small()
    target.requires_grad_(True)
    ids, values, present = batch()
    cross_entropy, jepa = jepa_maskgit.jepa_losses(model, target, predictors, ids, values, present,
                                                   torch.Generator().manual_seed(0), [2, 3])
    (cross_entropy + jepa).backward()
    assert all(p.grad is None for p in target.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in predictors.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.blocks[2].parameters())


def test_jepa_loss_falls_on_a_fixed_batch():
    model, target, predictors = small()
    ids, values, present = batch()
    optimizer = torch.optim.AdamW(list(model.parameters()) + list(predictors.parameters()), lr=2e-3)
    losses = []
    for step in range(100):
        _, jepa = jepa_maskgit.jepa_losses(model, target, predictors, ids, values, present,
                                           torch.Generator().manual_seed(step % 3), [2, 3])
        optimizer.zero_grad()
        jepa.backward()
        optimizer.step()
        losses.append(jepa.item())
    assert np.mean(losses[-10:]) < 0.8 * np.mean(losses[:10])            # about 1.0 -> 0.65


def test_weight_zero_trains_exactly_like_maskgit(tmp_path, tiny_run):
    a = tiny_run("maskgit.py")                                       # 4 steps, one evaluation, at 4
    scripts.main("jepa_maskgit.py", *ONCE, "--jepa-weight", "0", "--out", tmp_path / "b")
    la = [json.loads(line) for line in open(a / "metrics.jsonl")]
    lb = [json.loads(line) for line in open(tmp_path / "b" / "metrics.jsonl")]
    assert [m["loss"] for m in la] == [m["loss"] for m in lb]
    assert [m["acc"] for m in la] == [m["acc"] for m in lb]


def test_target_changes_only_by_the_ema_rule(tmp_path):
    """Momentum 1 keeps the target at the initial weights; momentum 0 at the first (and
    here only) step copies the model into it."""
    for momentum in ("1", "0"):
        out = tmp_path / momentum
        scripts.main("jepa_maskgit.py", *FAST, "--steps", "1", "--eval-every", "1",
                     "--jepa-momentum", momentum, "--out", out)
        state = torch.load(out / "ckpt.pt", weights_only=True)
        if momentum == "1":
            torch.manual_seed(0)
            reference = maskgit.MaskGIT(2048).state_dict()               # the seed-0 initialisation
        else:
            reference = state["model"]
        for key, value in state["target"].items():
            assert torch.equal(value, reference[key]), key


def refused(argv, capsys):
    return scripts.refused(jepa_maskgit, argv, capsys)


def test_bad_jepa_flags(tmp_path, capsys):
    for layers, bad in (("2,9", 9), ("4", 4)):                # 4 blocks: 0..3, one past the last
        code, said = refused(["--jepa-layers", layers, "--out", str(tmp_path / "x")], capsys)
        assert code == 2 and f"block {bad} does not exist; blocks are 0..3" in said, layers
    assert not (tmp_path / "x").exists()                         # checked before the folder is made
    for flag, value, message in (("--jepa-weight", "-1", "must be a number >= 0, got -1.0"),
                                 ("--jepa-momentum", "1.5", "must be in [0, 1], got 1.5")):
        code, said = refused([flag, value, "--out", str(tmp_path / "x")], capsys)
        assert code == 2 and f"{flag} {message}" in said
    code, said = refused(["--jepa-layers", "two", "--out", str(tmp_path / "x")], capsys)
    assert code == 2 and "comma list of block indices" in said


# -------------------------------------------------------------- each method function, held directly
def test_target_momentum_rises_linearly_from_its_start_to_one():
    assert jepa_maskgit.target_momentum(0, 1000, 0.996) == 0.996
    assert jepa_maskgit.target_momentum(500, 1000, 0.996) == pytest.approx(0.998)
    assert jepa_maskgit.target_momentum(1000, 1000, 0.996) == pytest.approx(1.0)


def test_jepa_losses_are_a_direct_computation():
    """The context sees the hidden ids, the target the full ones; each chosen layer's prediction is
    scored against the target's state, layer-normed, at the hidden positions; mean over layers."""
    model, target, predictors = small()
    torch.manual_seed(1)
    for p in target.parameters():                                        # a target unlike the model
        torch.nn.init.normal_(p, std=0.05)
    ids, values, present = batch()
    cross_entropy, jepa = jepa_maskgit.jepa_losses(model, target, predictors, ids, values, present,
                                                   torch.Generator().manual_seed(2), [2, 3])
    hidden = maskgit.random_mask(*ids.shape, torch.Generator().manual_seed(2))
    c, context = jepa_maskgit.block_outputs(model, ids.masked_fill(hidden, model.mask_id), values,
                                            present)
    _, targets = jepa_maskgit.block_outputs(target, ids, values, present)
    layer_norm = torch.nn.functional.layer_norm
    expected = sum(((predictor(context[layer][hidden]) - layer_norm(targets[layer][hidden], (64,)))
                    ** 2).mean() for predictor, layer in zip(predictors, [2, 3])) / 2
    logits = jepa_maskgit.readout(model, context[-1], c)
    assert jepa.item() == pytest.approx(expected.item(), rel=1e-5)
    assert cross_entropy.item() == pytest.approx(
        torch.nn.functional.cross_entropy(logits[hidden], ids[hidden]).item(), rel=1e-5)


def test_block_outputs_and_readout_are_maskgits_forward_pass():
    """What JEPA predicts and what it reads out: every block's output, and the head on the last,
    the very computation of MaskGIT.forward."""
    model, _, _ = small()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.05)
    ids, values, present = batch()
    c, states = jepa_maskgit.block_outputs(model, ids, values, present)
    assert len(states) == len(model.blocks) and states[0].shape == (*ids.shape, 64)
    assert torch.equal(jepa_maskgit.readout(model, states[-1], c), model(ids, values, present))


def test_jepa_maskgit_layer_list_reads_each_block_once_in_order():
    assert jepa_maskgit.layer_list("3,1,3") == [1, 3]
    assert jepa_maskgit.layer_list("2") == [2]


def test_jepa_maskgit_one_predictor_per_predicted_block_each_trained_by_its_loss():
    predictors = jepa_maskgit.make_predictors(16, [0, 2, 3])
    assert len(predictors) == 3
    h = torch.randn(4, 16)
    sum(p(h).square().mean() for p in predictors).backward()
    assert all(p[0].weight.grad.abs().sum() > 0 for p in predictors)
