"""A9, inside.py: ablated (take units out of a network) and linear_probe (read a layer).

The checks compare your ablation with a direct computation of each head's output on a small
network, and your probe with data whose answer is known."""
import numpy as np
import pytest
import torch

import data
import dit
from studies import inside

pytestmark = pytest.mark.a9


def small():
    torch.manual_seed(0)
    model = dit.DiT(48, width=32, depth=2, heads=4).eval()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.2)
    return model


def project(attention, heads):
    """The attention's output from its heads' outputs (B, H, T, d): concatenate, then out_proj."""
    return torch.nn.functional.linear(heads.transpose(1, 2).flatten(2), attention.out_proj.weight,
                                      attention.out_proj.bias)


@pytest.mark.parametrize("zero", [True, False])
def test_one_head_is_replaced_and_nothing_else(zero):
    model = small()
    attention = model.blocks[1].attention
    h = torch.randn(2, 64, 32, generator=torch.Generator().manual_seed(1))
    heads = inside.head_outputs(attention, h)
    mean = heads[:, 2].mean((0, 1))
    expected = heads.clone()
    expected[:, 2] = 0 if zero else mean
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        with inside.ablated(model, {"block 1 head 2"}, {"block 1 head 2": mean}, zero=zero):
            got = attention(h, h, h, need_weights=False)[0]
            other = model.blocks[0].attention(h, h, h, need_weights=False)[0]
        assert torch.allclose(got, project(attention, expected), atol=1e-5), \
            f"with head 2 of block 1 {'zeroed' if zero else 'at its mean'}, the attention's " \
            "output must be out_proj of the heads' outputs with that head replaced and the " \
            "others as they are"
        first = model.blocks[0].attention
        assert torch.allclose(other, project(first, inside.head_outputs(first, h)), atol=1e-5), \
            "block 0 was not asked for: it must stay as it is"
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), \
        "leaving the `with` block must restore every weight"


def test_an_mlp_or_a_modulation_is_replaced_by_its_mean():
    model = small()
    x, t = torch.randn(2, 64, 48), torch.full((2,), 0.5)
    latents = data.sample_latents([[0, 0, 0], [1, 1, 1]], np.random.default_rng(0))
    values, present = data.conditioning(latents, "continuous", train=False)
    means = {"block 0 mlp": torch.full((32,), 0.25), "block 1 adaLN": torch.zeros(6 * 32)}
    seen = {}
    with torch.no_grad():
        intact = model(x, t, values, present)
        with inside.ablated(model, set(means), means):
            hooks = [model.blocks[0].mlp.register_forward_hook(
                         lambda m, a, out: seen.update(mlp=out)),
                     model.blocks[1].modulation.register_forward_hook(
                         lambda m, a, out: seen.update(adaln=out))]
            model(x, t, values, present)                       # these hooks see what the block gets
            for hook in hooks:
                hook.remove()
            mlp, adaln = seen["mlp"], seen["adaln"]
        again = model(x, t, values, present)
    assert mlp.shape == (2, 64, 32) and adaln.shape == (2, 6 * 32), \
        "the replaced outputs keep their shapes"
    assert torch.allclose(mlp, torch.full_like(mlp, 0.25)), \
        "the MLP's output must be its mean, at every position"
    assert torch.equal(adaln, torch.zeros_like(adaln)), "the modulation's output must be its mean"
    assert torch.equal(intact, again), \
        "after the `with` block the network must compute what it did before"


def test_leaving_the_ablation_puts_everything_back():
    model = small()
    x, t = torch.randn(2, 64, 48), torch.full((2,), 0.5)
    latents = data.sample_latents([[0, 0, 0], [1, 1, 1]], np.random.default_rng(0))
    values, present = data.conditioning(latents, "continuous", train=False)
    means = {"block 0 head 1": torch.full((8,), 0.5), "block 1 head 3": torch.full((8,), -0.5),
             "block 1 head 0": torch.full((8,), 0.3),              # two heads of one block
             "block 0 mlp": torch.full((32,), 0.25), "block 1 adaLN": torch.zeros(6 * 32)}
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        intact = model(x, t, values, present)
        for zero in (True, False):
            with inside.ablated(model, set(means), means, zero=zero):
                ablated = model(x, t, values, present)
            assert not torch.allclose(ablated, intact, atol=1e-5), \
                "inside the `with` block the chosen units must be out: the output must change"
            changed = [k for k in before if not torch.equal(before[k], model.state_dict()[k])]
            shared = (" (heads 0 and 3 of block 1 share out_proj: put back in the reverse "
                      "order of saving, or save each weight once)"
                      if any("blocks.1.attention.out_proj" in k for k in changed) else "")
            assert not changed, \
                f"leaving the `with` block must put back every weight; changed: " \
                f"{changed[:3]}{shared}"
            assert torch.equal(model(x, t, values, present), intact), \
                "after the `with` block the network must compute what it did before (every hook " \
                "removed)"
        try:
            with inside.ablated(model, set(means), means):
                raise KeyError("an error inside the with block")
        except KeyError:
            pass
        changed = [k for k in before if not torch.equal(before[k], model.state_dict()[k])]
        assert not changed and torch.equal(model(x, t, values, present), intact), \
            "an error inside the `with` block must still put everything back (try ... finally)"


def near_the_boundary():
    """Training data whose labels are a logistic function of x along one direction u (slope 2),
    made symmetric (each x also as -x with the other label), so the fitted boundary is the plane
    through 0; and 16 test points along u, the first 8 where the true logit is 0.1 to 0.4, the
    last 8 where it is -0.1 to -0.4."""
    generator = torch.Generator().manual_seed(5)
    u = torch.randn(16, generator=generator)
    u = u / u.norm()
    x = torch.randn(2000, 16, generator=generator)
    labels = (torch.rand(2000, generator=generator) < torch.sigmoid(2 * x @ u)).long()
    along = torch.linspace(0.05, 0.2, 8)
    near = torch.cat([along, -along])[:, None] * u
    return torch.cat([x, -x]), torch.cat([labels, 1 - labels]), near


def test_the_probe_reads_a_linear_code_and_not_noise():
    generator = torch.Generator().manual_seed(0)
    labels = torch.randint(2, (400,), generator=generator)
    code = torch.randn(16, generator=generator)
    # far from the origin (1e3): the probe must standardise its features
    x = torch.randn(400, 16, generator=generator) + labels[:, None] * code + 1e3
    predicted = inside.linear_probe(x[:300], labels[:300], x[300:])
    assert predicted.shape == (100,), "one 0/1 prediction per test row"
    accuracy = (predicted == labels[300:]).float().mean().item()
    assert accuracy >= 0.9, \
        "the labels are a linear function of x here: expected >= 90% right, got " \
        f"{100 * accuracy:.0f}%"
    alone = x[300:][labels[300:] == 1]              # one class alone, as 111's samples are
    predicted = inside.linear_probe(x[:300], labels[:300], alone)
    accuracy = (predicted == 1).float().mean().item()
    assert accuracy >= 0.9, \
        "standardise the test features with the training set's mean and spread (a test set of " \
        f"one class is read as well as a mixed one): expected >= 90% right, got " \
        f"{100 * accuracy:.0f}%"
    # either side of the decision boundary: points with a true logit of +-0.1 to +-0.4
    near_x, near_labels, near = near_the_boundary()
    predicted = inside.linear_probe(near_x, near_labels, near)
    right = (predicted == (torch.arange(len(near)) < len(near) // 2).long()).sum().item()
    assert right == len(near), \
        "the probe decides 1 where its logit is above 0 (a probability above 1/2): of 16 points " \
        f"just either side of the boundary (logits of +-0.1 to +-0.4) it read {right} right; " \
        "is the logit compared with something else?"
    noise = torch.randn(400, 16, generator=generator)
    predicted = inside.linear_probe(noise[:300], labels[:300], noise[300:])
    accuracy = (predicted == labels[300:]).float().mean().item()
    assert 0.3 <= accuracy <= 0.7, \
        f"on pure noise a probe must be at chance, got {100 * accuracy:.0f}%"
