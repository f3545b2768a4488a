"""A7, data.py: conditioning, the four modes of the contract.

values are scaled as data.py does it: (latents - data.COND_CENTRE) / data.COND_SCALE.
Groups (data.COND_GROUPS): shape, colour, size, position; `present` says which are given."""
import numpy as np
import pytest
import torch

import data

pytestmark = pytest.mark.a7


def latents_of(codes, n, seed):
    bits = np.array([data.code_to_bits(code) for code in codes for _ in range(n)])
    return data.sample_latents(bits, np.random.default_rng(seed))


def unscale(values):
    return values * torch.as_tensor(data.COND_SCALE) + torch.as_tensor(data.COND_CENTRE)


def test_continuous_gives_the_exact_latents():
    latents = latents_of(["000", "111"], 50, seed=0)
    values, present = data.conditioning(latents, "continuous")
    assert values.shape == (100, 7) and present.shape == (100, 4) and present.dtype == torch.bool, \
        f"expected values (100, 7) and a bool present (100, 4); got {tuple(values.shape)}, " \
        f"{tuple(present.shape)} {present.dtype}"
    assert present.all(), "continuous: every group is given"
    raw = torch.as_tensor(latents, dtype=torch.float32)
    assert torch.allclose(unscale(values), raw, atol=1e-5), \
        "continuous: values are the latents, scaled by data.COND_CENTRE and data.COND_SCALE"


def test_discrete_keeps_only_the_three_bits():
    latents = latents_of(["011", "011", "100"], 40, seed=1)
    values, present = data.conditioning(latents, "discrete")
    assert not present[:, 3].any() and present[:, :3].all(), \
        "discrete: shape, colour and size given; position hidden"
    same = values[:80, :5]
    assert torch.allclose(same, same[:1].expand_as(same), atol=1e-6), \
        "discrete: two images of the same composition must get the same shape, colour and size " \
        "values"
    assert not torch.allclose(values[0, :5], values[-1, :5]), \
        "discrete: different compositions get different values"
    colors = unscale(values)[:, 1:4]
    blue = torch.as_tensor(data.CLASS_COLORS[1], dtype=torch.float32)
    assert torch.allclose(colors[0], blue, atol=1e-5), \
        "discrete: the colour becomes its class colour (data.CLASS_COLORS)"


def test_discrete_gives_each_factor_its_own_class_in_every_composition():
    codes = ["000", "001", "010", "011", "100", "101", "110", "111"]   # bits that differ, too
    latents = latents_of(codes, 3, seed=4)
    values, _ = data.conditioning(latents, "discrete")
    bits = np.array([data.code_to_bits(code) for code in codes for _ in range(3)])
    want = np.concatenate([bits[:, :1], data.CLASS_COLORS[bits[:, 1]],
                           data.SIZE_RANGES[bits[:, 2]].mean(1, keepdims=True)], 1)
    got = unscale(values)[:, :5].numpy()
    wrong = sorted({str(code) for code, row in zip(np.repeat(codes, 3), np.abs(got - want).max(1))
                    if row > 1e-4})
    assert not wrong, \
        "discrete: shape 0 or 1, the colour of the colour bit's class, the centre of the size " \
        f"bit's class (data.SIZE_RANGES), each factor from its own bit; wrong for {wrong}"


@pytest.mark.parametrize("mode", ["dropout", "discrete-dropout"])
def test_dropout_hides_each_factor_on_its_own_in_training_only(mode):
    latents = latents_of(["000", "001", "010", "100"], 5000, seed=2)
    values, present = data.conditioning(latents, mode, 0.3, torch.Generator().manual_seed(3),
                                        train=True)
    hidden = ~present[:, :3]
    share = hidden.float().mean(0)
    assert (share - 0.3).abs().max() < 0.02, \
        f"{mode}: each of shape, colour, size hidden with p = 0.3; got {share.tolist()}"
    both = (hidden[:, 0] & hidden[:, 1]).float().mean().item()
    assert abs(both - 0.09) < 0.015, \
        f"{mode}: the factors are hidden independently (both: 0.3 x 0.3 = 0.09); got {both:.3f}"
    plain = mode.replace("dropout", "").strip("-") or "continuous"        # the mode, no dropout
    base, base_present = data.conditioning(latents, plain)
    assert torch.equal(present[:, 3], base_present[:, 3]), \
        f"{mode}: dropout never touches the position group"
    assert torch.allclose(values[present[:, :3].all(1)], base[present[:, :3].all(1)]), \
        f"{mode}: the values of the given groups are those of the mode without dropout"
    _, at_sampling = data.conditioning(latents[:100], mode, 0.3, torch.Generator().manual_seed(3),
                                       train=False)
    assert torch.equal(at_sampling, base_present[:100]), \
        f"{mode}: at sampling time (train=False) nothing is hidden"


@pytest.mark.parametrize("mode", ["dropout", "discrete-dropout"])
def test_dropout_draws_from_the_generator_it_is_given(mode):
    latents = latents_of(["000", "111"], 100, seed=5)
    hidden = []
    for global_seed, seed in ((0, 7), (1, 7), (0, 8)):
        torch.manual_seed(global_seed)
        state = torch.get_rng_state()
        _, present = data.conditioning(latents, mode, 0.3, torch.Generator().manual_seed(seed))
        hidden.append(~present[:, :3])
        assert torch.equal(torch.get_rng_state(), state), \
            f"{mode}: draw with the generator you are given (rng), not torch's global random state"
    assert torch.equal(hidden[0], hidden[1]), \
        f"{mode}: the same generator seed must hide the same factors (the run's generator is " \
        "saved for --resume): draw with rng"
    assert not torch.equal(hidden[0], hidden[2]), \
        f"{mode}: another generator seed must hide other factors"


def test_an_unknown_mode_is_refused_by_name():
    with pytest.raises(ValueError, match="fuzzy"):
        data.conditioning(latents_of(["000"], 2, seed=0), "fuzzy")
