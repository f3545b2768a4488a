import math

import numpy as np
import pytest
import torch

import data
import maskgit

VOCAB = 64


def small_model():
    torch.manual_seed(0)
    return maskgit.MaskGIT(VOCAB, width=64, depth=2, heads=4)


def condition(n):
    latents = data.sample_latents([[1, 0, 1]] * n, np.random.default_rng(0))
    return data.conditioning(latents, "continuous", train=False)


def test_mask_schedule_ends():
    assert maskgit.mask_ratio(torch.tensor(0.0)) == 1
    assert abs(maskgit.mask_ratio(torch.tensor(1.0))) < 1e-6
    r = torch.linspace(0, 1, 11)
    assert (maskgit.mask_ratio(r).diff() < 0).all()                        # always decreasing


def test_the_linear_schedule_hides_one_minus_r():
    r = torch.linspace(0, 1, 11)
    assert torch.allclose(maskgit.mask_ratio(r, "linear"), 1 - r)
    hidden = maskgit.random_mask(2000, 64, torch.Generator().manual_seed(0), "linear")
    assert abs(hidden.sum(1).float().mean().item() / 64 - 0.5) < 0.03           # E[1 - r] = 1/2
    full = torch.ones(1, 64, dtype=torch.bool)
    counts = [maskgit.remask_count(s, 8, 64, full, "linear") for s in range(8)]
    assert counts == [56, 48, 40, 32, 24, 16, 8, 0]                        # (1 - (s + 1) / 8) * 64
    # cosine: the default
    assert maskgit.remask_count(1, 8, 64, full) == math.floor(math.cos(math.pi / 8) * 64)
    with pytest.raises(ValueError, match="unknown mask schedule 'Linear'"):
        maskgit.mask_ratio(r, "Linear")


def test_random_mask_counts():
    hidden = maskgit.random_mask(2000, 64, torch.Generator().manual_seed(0))
    counts = hidden.sum(1)
    assert counts.min() >= 1 and counts.max() <= 64
    # E[cos(pi r / 2)] = 2 / pi of the tokens are hidden on average
    assert abs(counts.float().mean().item() / 64 - 2 / math.pi) < 0.03


def test_initial_loss_is_log_vocabulary_size():
    model = small_model()
    ids = torch.randint(VOCAB, (16, 64))
    values, present = condition(16)
    loss = maskgit.masked_loss(model, ids, values, present, torch.Generator().manual_seed(0))
    assert abs(loss.item() - math.log(VOCAB)) < 1e-4


def test_no_leakage_of_masked_answers():
    """The logits must not change when only the hidden ids change."""
    model = small_model()
    for p in model.parameters():                                            # leave the zero init
        torch.nn.init.normal_(p, std=0.05)
    ids = torch.randint(VOCAB, (4, 64))
    hidden = maskgit.random_mask(4, 64, torch.Generator().manual_seed(1))
    other = torch.where(hidden, (ids + 1) % VOCAB, ids)
    values, present = condition(4)
    a = model(ids.masked_fill(hidden, model.mask_id), values, present)
    b = model(other.masked_fill(hidden, model.mask_id), values, present)
    assert torch.equal(a, b)


def test_loss_falls_when_overfitting_one_batch():
    model = small_model()
    ids = torch.randint(VOCAB, (8, 64), generator=torch.Generator().manual_seed(0))
    values, present = condition(8)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step in range(150):
        loss = maskgit.masked_loss(model, ids, values, present, torch.Generator().manual_seed(step))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])


def test_decoding_leaves_no_mask_and_keeps_decoded_ids():
    model = small_model()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.1)
    seen = []
    forward = model.forward
    model.forward = lambda ids, *a, **k: (seen.append(ids.clone()), forward(ids, *a, **k))[1]
    values, present = condition(5)
    for unmask in ("confidence", "random"):
        seen.clear()
        ids = maskgit.sample(model, values, present, 8, torch.Generator().manual_seed(0), unmask)
        assert len(seen) == 8 and (seen[0] == model.mask_id).all()
        assert not (ids == model.mask_id).any() and ids.max() < VOCAB
        steps = seen + [ids]
        for before, after in zip(steps[:-1], steps[1:]):
            decoded = before != model.mask_id
            assert torch.equal(after[decoded], before[decoded])             # committed ids stay
            assert (decoded.sum(1) < (after != model.mask_id).sum(1)).all()  # progress each step


# -------------------------------------------------------------- each method function, held directly
class Fixed(torch.nn.Module):
    """A stand-in network: the same logits (T, V) for every image, whatever it is shown; it keeps
    what it was shown, so a test can see which positions were hidden."""

    def __init__(self, logits, mask_id=VOCAB):
        super().__init__()
        self.logits, self.mask_id, self.seen = logits, mask_id, []
        self.p = torch.nn.Parameter(torch.zeros(1))

    def forward(self, ids, values, present):
        self.seen.append(ids.clone())
        return self.logits.expand(len(ids), -1, -1)


def test_mask_ratio_is_cos_pi_r_over_2_between_the_ends():
    r = torch.tensor([0.1, 0.3, 0.5, 0.8])
    assert torch.allclose(maskgit.mask_ratio(r), torch.cos(math.pi / 2 * r))
    assert torch.allclose(maskgit.mask_ratio(r, "linear"), 1 - r)


def test_random_mask_hides_the_ceiling_of_gamma_r_T_with_r_drawn_first():
    hidden = maskgit.random_mask(500, 64, torch.Generator().manual_seed(3))
    r = torch.rand(500, generator=torch.Generator().manual_seed(3))           # the same first draw
    expected = (torch.cos(math.pi / 2 * r) * 64).ceil().clamp(min=1)
    assert torch.equal(hidden.sum(1), expected.long())


def test_masked_loss_is_the_cross_entropy_of_the_hidden_ids_alone():
    logits = torch.randn(64, VOCAB, generator=torch.Generator().manual_seed(0))
    model = Fixed(logits)
    ids = torch.randint(VOCAB, (6, 64), generator=torch.Generator().manual_seed(1))
    values, present = condition(6)
    loss = maskgit.masked_loss(model, ids, values, present, torch.Generator().manual_seed(2))
    hidden = maskgit.random_mask(6, 64, torch.Generator().manual_seed(2))
    assert torch.equal(model.seen[0], ids.masked_fill(hidden, VOCAB))        # hidden exactly there
    log_p = logits.log_softmax(-1).expand(6, -1, -1).gather(-1, ids[..., None])[..., 0]
    assert loss.item() == pytest.approx(-log_p[hidden].mean().item(), rel=1e-5)


def test_remask_count_follows_the_schedule_and_never_goes_below_zero():
    full = torch.ones(1, 64, dtype=torch.bool)
    for schedule, gamma in (("cosine", lambda r: math.cos(math.pi / 2 * r)),
                            ("linear", lambda r: 1 - r)):
        counts = [maskgit.remask_count(s, 10, 64, full, schedule) for s in range(10)]
        assert counts == [math.floor(gamma((s + 1) / 10) * 64) for s in range(9)] + [0], schedule
    assert maskgit.remask_count(3, 100, 64, torch.zeros(1, 64, dtype=torch.bool)) == 0   # all drawn
    two_left = torch.zeros(1, 64, dtype=torch.bool)
    two_left[0, :2] = True
    assert maskgit.remask_count(0, 100, 64, two_left) == 1            # one fewer than now, at least


def test_decoding_commits_the_most_confident_ids_first():
    """Positions 0-7 are sure of their id, the rest flat: the first of two steps commits 64 - 45
    = 19 ids, among them all eight sure ones (no Gumbel noise on the confidence here)."""
    logits = torch.zeros(64, VOCAB)
    logits[:8, 5] = 20.0
    model = Fixed(logits)
    values, present = condition(4)
    maskgit.sample(model, values, present, 2, torch.Generator().manual_seed(0),
                   choice_temperature=0.0)
    after_first = model.seen[1] != VOCAB                                    # committed by step 1
    assert (after_first.sum(1) == 64 - math.floor(math.cos(math.pi / 4) * 64)).all()
    assert after_first[:, :8].all() and (model.seen[1][:, :8] == 5).all()


def test_decoding_draws_ids_from_the_head_not_its_most_likely_one():
    logits = torch.full((64, VOCAB), -30.0)
    logits[:, 0], logits[:, 1] = math.log(0.7), math.log(0.3)
    values, present = condition(50)
    ids = maskgit.sample(Fixed(logits), values, present, 1, torch.Generator().manual_seed(0))
    assert abs((ids == 1).float().mean().item() - 0.3) < 0.02            # 3,200 draws of p(1) = 0.3


def test_maskgit_a_fresh_network_gives_every_code_the_same_logit():
    """adaLN-Zero on the head: training starts from the uniform distribution over the codebook."""
    values, present = condition(2)
    logits = small_model()(torch.randint(VOCAB, (2, 64)), values, present)
    assert logits.shape == (2, 64, VOCAB) and torch.count_nonzero(logits) == 0


def test_maskgit_each_position_enters_as_its_codes_embedding_plus_its_position():
    """A fresh block is the identity (adaLN-Zero), so every block's output is still the input."""
    model = small_model()
    ids = torch.randint(VOCAB + 1, (2, 64))                              # [MASK] included
    values, present = condition(2)
    states = []
    hooks = [block.register_forward_hook(lambda m, a, out: states.append(out))
             for block in model.blocks]
    model(ids, values, present)
    for hook in hooks:
        hook.remove()
    expected = model.embed(ids) + maskgit.sincos_positions(64, 8)
    assert len(states) == len(model.blocks)
    assert all(torch.allclose(state, expected, atol=1e-6) for state in states)


def test_maskgit_readout_is_the_modulated_head_of_the_last_state():
    """Fresh blocks are the identity, so the logits are the head on the modulated, normalised
    input: head(LN(h) (1 + scale) + shift), shift and scale from the condition."""
    model = small_model()
    for layer in (model.final_modulation, model.head):
        torch.nn.init.normal_(layer.weight, std=0.3)
    ids = torch.randint(VOCAB + 1, (2, 64))
    values, present = condition(2)
    h, c = model.embed(ids) + model.positions, model.condition(values, present)
    shift, scale = model.final_modulation(torch.nn.functional.silu(c))[:, None].chunk(2, -1)
    normed = torch.nn.functional.layer_norm(h, (64,), eps=1e-6)
    assert torch.allclose(model(ids, values, present), model.head(normed * (1 + scale) + shift),
                          atol=1e-5)


