"""The samplers step by step, each driven by a stand-in network that records what it is called
with: the ids or tokens it is shown, the noise level it is told, the slot the sampler reads, and
what the sampler commits from its answer. (dit.py's Euler sampler, as objects.py draws with it, is
held the same way in tests/test_objects.py.)

- maskgit.py: the first decoding step commits the ids of highest log p + tau (1 - 1/S) g, log p
  normalised over the codebook (a raw logit is no confidence).
- givt.py: the same step over tokens, log p the mixture's density of the drawn token.
- mar.py: the per-token denoiser starts from unit noise, tells its head t = 1, ..., 1/S, and steps
  to the DDPM posterior mean plus temperature x its standard deviation of fresh noise.
- ar.py: token i is drawn from slot i (the newest), its spread the chosen component's scale.
"""
import math

import numpy as np
import torch

from studies import ar
import data
import givt
import mar
import maskgit

VOCAB = 64


def condition(n):
    latents = data.sample_latents([[1, 0, 1]] * n, np.random.default_rng(0))
    return data.conditioning(latents, "continuous", train=False)


def seeded(seed):
    return torch.Generator().manual_seed(seed)


def gumbel(u):
    return -torch.log(-torch.log(u.clamp(1e-20)))


class Parameter(torch.nn.Module):
    """What a stand-in needs of a network: a parameter, where the samplers read the device."""

    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(torch.zeros(1))


# ------------------------------------------------------------------------------- maskgit.py
class Logits(Parameter):
    """A stand-in MaskGIT: the same logits (T, V) for every image; it keeps the ids it is shown."""

    def __init__(self, logits):
        super().__init__()
        self.logits, self.mask_id, self.shown = logits, VOCAB, []

    def forward(self, ids, values, present):
        self.shown.append(ids.clone())
        return self.logits.expand(len(ids), -1, -1)


def test_maskgit_commits_by_normalised_log_probability_not_by_raw_logit():
    """Positions 0-23 give every id logit 50 (loud but flat: log p = -log 64), positions 40-47 give
    id 3 logit 20 (sure: log p about 0), the rest 0 (flat). The first of two steps commits 19 ids,
    the eight sure ones among them (by raw logit it would take 19 loud ones)."""
    logits = torch.zeros(64, VOCAB)
    logits[:24] = 50.0
    logits[40:48, 3] = 20.0
    model = Logits(logits)
    values, present = condition(4)
    maskgit.sample(model, values, present, 2, seeded(0), choice_temperature=0.0)
    committed = model.shown[1] != VOCAB
    assert (committed.sum(1) == 19).all()
    assert committed[:, 40:48].all() and (model.shown[1][:, 40:48] == 3).all()


def test_maskgit_first_decoding_step_commits_log_p_plus_annealed_gumbel_noise():
    """Three steps, choice temperature 2: the ids committed by step 0 are the 64 - 45 of highest
    log p(drawn) + 2 (1 - 1/3) g, with the sampler's draws in its order (Gumbel-max ids, then g)."""
    g = seeded(0)
    logits = torch.randn(64, VOCAB, generator=g) * 2
    model = Logits(logits)
    values, present = condition(6)
    maskgit.sample(model, values, present, 3, seeded(1), choice_temperature=2.0)
    replay = seeded(1)
    full = logits.expand(6, -1, -1)
    drawn = (full + gumbel(torch.rand(full.shape, generator=replay))).argmax(-1)
    log_p = full.log_softmax(-1).gather(-1, drawn[..., None])[..., 0]
    confidence = log_p + 2.0 * (1 - 1 / 3) * gumbel(torch.rand(6, 64, generator=replay))
    hidden = math.floor(math.cos(math.pi / 2 / 3) * 64)                  # hidden again: 55
    committed = confidence.argsort(1)[:, hidden:]
    expected = torch.ones(6, 64, dtype=torch.bool).scatter(1, committed, False)
    assert torch.equal(model.shown[1] == VOCAB, expected)
    assert torch.equal(model.shown[1][~expected], drawn[~expected])


# ---------------------------------------------------------------------------------- givt.py
class Mixture(Parameter):
    """A stand-in GIVT: the same mixture at every image; it keeps the masks it is given."""

    def __init__(self, log_weights, means, scales):
        super().__init__()
        self.mixture, self.masks = (log_weights, means, scales), []

    def forward(self, x, mask, values, present):
        self.masks.append(mask.clone())
        return tuple(p.expand(len(x), *p.shape) for p in self.mixture)


def test_givt_first_decoding_step_commits_log_density_plus_annealed_gumbel_noise():
    """Three steps, unmask confidence, choice temperature 2: after step 0 the 45 tokens of lowest
    log p(drawn) + 2 (1 - 1/3) g are hidden again, p the whole mixture's density of the token drawn
    (component by Gumbel-max, then mu + sigma n), with the sampler's draws in its order."""
    g = seeded(0)
    mixture = (torch.randn(64, 3, generator=g).log_softmax(-1), torch.randn(64, 3, 4, generator=g),
               torch.rand(64, 3, 4, generator=g) + 0.05)
    model = Mixture(*mixture)
    values, present = condition(6)
    givt.sample(model, values, present, 4, 3, seeded(1), "confidence", 2.0)
    replay = seeded(1)
    log_weights, means, scales = (p.expand(6, *p.shape) for p in mixture)
    k = (log_weights + gumbel(torch.rand(log_weights.shape, generator=replay))).argmax(-1)
    pick = k[..., None, None].expand(-1, -1, 1, 4)
    mu, sigma = means.gather(2, pick)[:, :, 0], scales.gather(2, pick)[:, :, 0]
    drawn = mu + sigma * torch.randn(mu.shape, generator=replay)
    z = (drawn[..., None, :] - means) / scales
    log_p = torch.logsumexp(log_weights + (-0.5 * z ** 2 - scales.log()
                                           - 0.5 * math.log(2 * math.pi)).sum(-1), -1)
    confidence = log_p + 2.0 * (1 - 1 / 3) * gumbel(torch.rand(6, 64, generator=replay))
    hidden = math.floor(math.cos(math.pi / 2 / 3) * 64)
    lowest = confidence.argsort(1)[:, :hidden]
    expected = torch.zeros(6, 64, dtype=torch.bool).scatter(1, lowest, True)
    assert torch.equal(model.masks[1], expected)


# ----------------------------------------------------------------------------------- mar.py
def guess(x_t, t, z):
    return 0.4 * x_t + 0.2 * t[:, None] + 0.1 * z[:, :1]


class Denoiser(Parameter):
    """A stand-in MAR head: eps_hat = guess(x_t, t, z); it keeps what it is called with."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def diffusion(self, x_t, t, z):
        self.calls.append((x_t.clone(), t.clone()))
        return guess(x_t, t, z)


def test_mar_denoiser_steps_down_from_t_1_to_the_posterior_mean_and_spread():
    """Four DDPM steps at temperature 0.5: x starts as the generator's unit noise; the head is told
    t = 1, 3/4, 1/2, 1/4; each step x_s = mean + 0.5 sqrt(variance) n, the posterior of
    x_s given x_t and x0_hat = (x_t - sqrt(1 - a_t) eps_hat) / sqrt(a_t)."""
    model, z = Denoiser(), torch.randn(400, 8, generator=seeded(0))
    out = mar.denoise(model, z, 6, 4, seeded(1), temperature=0.5)
    replay = seeded(1)
    x = torch.randn(400, 6, generator=replay)
    times = [1.0, 0.75, 0.5, 0.25, 0.0]
    assert len(model.calls) == 4 and abs(x.std().item() - 1) < 0.05
    for (shown, told), t, s in zip(model.calls, times, times[1:]):
        assert torch.equal(told, torch.full((400,), t)) and torch.allclose(shown, x), t
        a_t, a_s = mar.alpha_bar(torch.tensor(t)), mar.alpha_bar(torch.tensor(s))
        x0_hat = (x - (1 - a_t).sqrt() * guess(x, told, z)) / a_t.sqrt()
        beta = 1 - a_t / a_s
        mean = (a_s.sqrt() * beta * x0_hat + (a_t / a_s).sqrt() * (1 - a_s) * x) / (1 - a_t)
        variance = beta * (1 - a_s) / (1 - a_t)
        x = mean + 0.5 * variance.sqrt() * torch.randn(x.shape, generator=replay)
    assert torch.allclose(out, x, atol=1e-5)


# ------------------------------------------------------------------------------------ ar.py
class Slots(Parameter):
    """A stand-in AR: slot j of every call predicts token j (categorical: id j is sure; gmm: the
    mixture below, its means moved by j / 64); it keeps the prefixes it is shown."""

    def __init__(self, categorical, mixture=None):
        super().__init__()
        self.categorical, self.mixture, self.token_dim, self.prefixes = categorical, mixture, 2, []

    def forward(self, prefix, values, present):
        self.prefixes.append(prefix.clone())
        slots = torch.arange(prefix.shape[1] + 1, dtype=torch.float32)
        if self.categorical:
            sure = 30.0 * torch.nn.functional.one_hot(slots.long(), VOCAB).float()
            return sure.expand(len(prefix), -1, -1)
        log_weights, means, scales = self.mixture                      # (K,), (K, C), (K, C)
        shape = (len(prefix), len(slots))
        means = means + slots[:, None, None] / 64                       # (L + 1, K, C)
        return (log_weights.expand(*shape, -1), means.expand(*shape, -1, -1),
                scales.expand(*shape, -1, -1))


def test_ar_draws_token_i_from_the_newest_slot():
    """Slot j predicts token j: a sampler that reads the newest slot draws 0, 1, ..., 63."""
    values, present = condition(3)
    ids = ar.sample(Slots(True), values, present, seeded(0))
    assert torch.equal(ids, torch.arange(64).expand(3, -1))
    one = (torch.zeros(1), torch.zeros(1, 2), torch.full((1, 2), 0.5))
    x = ar.sample(Slots(False, one), values, present, seeded(0), temperature=0)
    assert torch.allclose(x, (torch.arange(64.0) / 64)[None, :, None].expand(3, -1, 2))


def test_ar_gmm_draws_a_component_by_weight_and_spreads_as_scale_x_temperature():
    """Two components, weights 0.3 and 0.7, means -1 and +1, scale 0.05: 70% of tokens near +1;
    each token's distance from its mean spreads as 0.05 x the temperature."""
    values, present = condition(50)
    two = (torch.tensor([0.3, 0.7]).log(), torch.tensor([[-1.0] * 2, [1.0] * 2]),
           torch.full((2, 2), 0.05))
    for temperature in (1.0, 0.5):
        x = ar.sample(Slots(False, two), values, present, seeded(0), temperature)
        centred = x - torch.arange(64.0)[None, :, None] / 64                 # slot j's shift
        above = centred[..., 0] > 0
        assert abs(above.float().mean().item() - 0.7) < 0.03, temperature
        spread = (centred - torch.where(above, 1.0, -1.0)[..., None]).std().item()
        assert abs(spread - 0.05 * temperature) < 0.003 * temperature, (temperature, spread)
