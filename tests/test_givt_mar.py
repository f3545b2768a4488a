import math

import numpy as np
import pytest
import torch

import data
import tokenizers
import givt
import mar


def condition(n):
    latents = data.sample_latents([[1, 1, 1]] * n, np.random.default_rng(0))
    return data.conditioning(latents, "continuous", train=False)


def test_gmm_log_density_matches_a_direct_computation():
    x, mu, sigma = torch.tensor([[0.3]]), torch.tensor([[[-0.2]]]), torch.tensor([[[0.7]]])
    direct = -0.5 * ((0.3 + 0.2) / 0.7) ** 2 - math.log(0.7) - 0.5 * math.log(2 * math.pi)
    got = givt.log_density(x, torch.zeros(1, 1), mu, sigma)
    assert abs(got.item() - direct) < 1e-6
    # two equal components with weights 1/2 each give the same density
    got2 = givt.log_density(x, torch.log(torch.tensor([[0.5, 0.5]])), mu.repeat(1, 2, 1),
                            sigma.repeat(1, 2, 1))
    assert abs(got2.item() - direct) < 1e-6


def test_gmm_scales_stay_positive_and_weights_normalised():
    torch.manual_seed(0)
    model = givt.GIVT(48, components=4, width=64, depth=2)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=1.0)                                  # far from initialisation
    values, present = condition(3)
    log_weights, means, scales = model(torch.randn(3, 64, 48), torch.rand(3, 64) < 0.5, values,
                                       present)
    assert means.shape == scales.shape == (3, 64, 4, 48) and log_weights.shape == (3, 64, 4)
    assert (scales >= givt.SCALE_FLOOR).all()
    assert torch.allclose(log_weights.exp().sum(-1), torch.ones(3, 64), atol=1e-5)


def test_gmm_components_start_distinct():
    model = givt.GIVT(48, components=4, width=64, depth=2)
    values, present = condition(1)
    _, means, _ = model(torch.zeros(1, 64, 48), torch.ones(1, 64, dtype=torch.bool), values,
                        present)
    assert (means[0, 0, 0] - means[0, 0, 1]).abs().max() > 0.1


def overfit(loss_fn, model, steps=120, lr=2e-3):
    images = data.make_dataset(["000", "100"], 4, seed=0)[0]
    x = torch.as_tensor(tokenizers.patchify(images, 4)) * 2 - 1
    values, present = data.conditioning(data.make_dataset(["000", "100"], 4, seed=0)[2],
                                        "continuous")
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        loss = loss_fn(model, x, values, present, torch.Generator().manual_seed(step % 3))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_givt_loss_falls_on_a_fixed_batch():
    torch.manual_seed(0)
    losses = overfit(givt.masked_loss, givt.GIVT(48, components=4, width=64, depth=2))
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 1.0


def test_mar_diffusion_loss_falls_on_a_fixed_batch():
    torch.manual_seed(0)
    losses = overfit(mar.masked_loss, mar.MAR(48, width=64, depth=2))
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])


def test_mar_learns_with_either_time_distribution_and_logit_normal_leans_to_noise():
    generator = torch.Generator().manual_seed(0)
    leaning = mar.draw_time(20000, "logit-normal", generator)
    assert 0 < leaning.min() and leaning.max() < 1 and abs(leaning.median() - 0.69) < 0.02
    uniform = mar.draw_time(20000, "uniform", generator)
    assert (leaning < 0.1).float().mean() < 0.01 < (uniform < 0.1).float().mean()
    torch.manual_seed(0)

    def loss(m, x, v, p, g):                                        # the default: above
        return mar.masked_loss(m, x, v, p, g, time_dist="uniform")

    losses = overfit(loss, mar.MAR(48, width=64, depth=2))
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])


def test_cosine_schedule_ends():
    assert mar.alpha_bar(torch.tensor(0.0)).item() == 1
    assert abs(mar.alpha_bar(torch.tensor(1.0)).item() - 1e-4) < 1e-9
    assert (mar.alpha_bar(torch.linspace(0, 1, 50)).diff() <= 0).all()


def test_sampling_returns_finite_tokens_of_the_right_shape():
    torch.manual_seed(0)
    values, present = condition(3)
    g = torch.Generator().manual_seed(0)
    for unmask in ("confidence", "random"):
        x = givt.sample(givt.GIVT(48, 4, width=64, depth=2), values, present, 48, 6, g, unmask)
        assert x.shape == (3, 64, 48) and torch.isfinite(x).all()
    x = mar.sample(mar.MAR(48, width=64, depth=2), values, present, 48, 6, g, diffusion_steps=5)
    assert x.shape == (3, 64, 48) and torch.isfinite(x).all()


def test_mar_denoiser_with_a_perfect_eps_lands_on_the_token():
    """If eps_hat is exact for a single known x0, the DDPM sampler returns that x0."""
    target = torch.rand(5, 48) * 2 - 1

    class Oracle(torch.nn.Module):
        def diffusion(self, x_t, t, z):
            a = mar.alpha_bar(t[:1])
            return (x_t - a.sqrt() * target) / (1 - a).sqrt()

    x = mar.denoise(Oracle(), torch.zeros(5, 8), 48, 20, torch.Generator().manual_seed(0))
    assert torch.allclose(x, target, atol=1e-4)


def test_component_choice_follows_pi_at_tau_1_sharpens_below_and_takes_the_likeliest_at_0():
    pi = torch.tensor([0.6, 0.3, 0.1])
    log_weights = pi.log().expand(20000, 3)
    generator = torch.Generator().manual_seed(0)
    for tau, expected in ((1.0, pi), (0.5, pi ** 2 / (pi ** 2).sum())):
        k = givt.choose_component(log_weights, tau, generator)
        share = torch.bincount(k, minlength=3).float() / len(k)
        assert torch.allclose(share, expected, atol=0.015), (tau, share)
    varied = torch.randn(50, 64, 8)
    assert torch.equal(givt.choose_component(varied, 0.0, generator), varied.argmax(-1))


def test_mar_draws_every_token_exactly_once_for_any_number_of_decoding_steps(monkeypatch):
    """More decoding steps than tokens: once every token is drawn, none is hidden and drawn
    again."""
    torch.manual_seed(0)
    values, present = condition(2)
    drawn = []
    denoise = mar.denoise
    monkeypatch.setattr(mar, "denoise",
                        lambda model, z, *args: drawn.append(len(z)) or denoise(model, z, *args))
    model = mar.MAR(48, width=32, depth=1)
    for steps in (10, 64, 66, 100):
        drawn.clear()
        mar.sample(model, values, present, 48, steps, torch.Generator().manual_seed(0),
                   diffusion_steps=1)
        assert sum(drawn) == 2 * 64, (steps, sum(drawn))
    assert mar.remask_count(70, 100, 64, torch.zeros(2, 64, dtype=torch.bool)) == 0


# -------------------------------------------------------------- each method function, held directly
def direct_log_density(x, log_weights, means, scales):
    """The mixture's log-density in float64, one component and one value at a time."""
    x, log_weights, means, scales = (t.double() for t in (x, log_weights, means, scales))
    per_component = log_weights + (-0.5 * ((x[..., None, :] - means) / scales) ** 2 - scales.log()
                                   - 0.5 * math.log(2 * math.pi)).sum(-1)
    return torch.logsumexp(per_component, -1)


def test_gmm_log_density_in_several_dimensions_with_unequal_components():
    g = torch.Generator().manual_seed(0)
    x, means = torch.randn(5, 3, generator=g), torch.randn(5, 2, 3, generator=g)
    scales = torch.rand(5, 2, 3, generator=g) + 0.2
    log_weights = torch.log(torch.tensor([0.8, 0.2])).expand(5, 2)
    got = givt.log_density(x, log_weights, means, scales)
    assert torch.allclose(got.double(), direct_log_density(x, log_weights, means, scales),
                          atol=1e-5)


def test_gmm_log_density_stays_finite_where_every_density_underflows():
    """Scales of 0.001 and a token 0.05 away: each density is exp(-1250 * 48), 0 in float32; its
    log is not."""
    x, means = torch.zeros(1, 48), torch.full((1, 2, 48), 0.05)
    scales, log_weights = torch.full((1, 2, 48), 0.001), torch.log(torch.tensor([[0.5, 0.5]]))
    got = givt.log_density(x, log_weights, means, scales)
    assert torch.isfinite(got).all()
    assert got.item() == pytest.approx(direct_log_density(x, log_weights, means, scales).item(),
                                       rel=1e-5)


class FixedMixture(torch.nn.Module):
    """A stand-in GIVT: the same mixture (log weights (T, K), means and scales (T, K, C)) at every
    image; it keeps the hidden sets it was given."""

    def __init__(self, log_weights, means, scales):
        super().__init__()
        self.mixture, self.given = (log_weights, means, scales), []
        self.p = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x, hidden, values, present):
        self.given.append(hidden.clone())
        return tuple(p.expand(len(x), *p.shape) for p in self.mixture)


def test_givt_masked_loss_is_the_mixtures_nll_per_value_on_the_hidden_tokens():
    g = torch.Generator().manual_seed(0)
    mixture = (torch.randn(64, 2, generator=g).log_softmax(-1), torch.randn(64, 2, 5, generator=g),
               torch.rand(64, 2, 5, generator=g) + 0.3)
    x = torch.randn(3, 64, 5, generator=g)
    values, present = condition(3)
    loss = givt.masked_loss(FixedMixture(*mixture), x, values, present,
                            torch.Generator().manual_seed(1))
    hidden = givt.random_mask(3, 64, torch.Generator().manual_seed(1))
    nll = -direct_log_density(x, *(p.expand(3, *p.shape) for p in mixture))
    assert loss.item() == pytest.approx((nll[hidden].mean() / 5).item(), rel=1e-5)


def test_givt_draws_tokens_from_the_mixture_not_its_mean():
    """One component, mean 0.3, sigma 0.5: the drawn values spread as N(0.3, 0.5^2); at
    temperature 0 every token is the mean."""
    mixture = (torch.zeros(64, 1), torch.full((64, 1, 4), 0.3), torch.full((64, 1, 4), 0.5))
    values, present = condition(20)
    x = givt.sample(FixedMixture(*mixture), values, present, 4, 3, torch.Generator().manual_seed(0))
    assert abs(x.mean().item() - 0.3) < 0.02 and abs(x.std().item() - 0.5) < 0.02
    cold = givt.sample(FixedMixture(*mixture), values, present, 4, 3,
                       torch.Generator().manual_seed(0), temperature=0.0)
    assert torch.allclose(cold, torch.full_like(cold, 0.3))


def test_givt_confidence_commits_the_likeliest_tokens_first():
    """Tokens 0-7 are drawn from a narrow Gaussian (high density), the rest from a wide one: with
    unmask confidence and no Gumbel noise, the first of two steps commits all eight."""
    scales = torch.full((64, 1, 4), 1.0)
    scales[:8] = 0.01
    model = FixedMixture(torch.zeros(64, 1), torch.zeros(64, 1, 4), scales)
    values, present = condition(4)
    givt.sample(model, values, present, 4, 2, torch.Generator().manual_seed(0), "confidence",
                choice_temperature=0.0)
    still_hidden = model.given[1]
    assert not still_hidden[:, :8].any() and still_hidden.sum(1).eq(45).all()


def test_alpha_bar_is_the_normalised_cosine_between_the_ends():
    def f(u):
        return math.cos(math.pi / 2 * (u + 0.008) / 1.008) ** 2

    for t in (0.25, 0.5, 0.9):
        assert mar.alpha_bar(torch.tensor(t)).item() == pytest.approx(f(t) / f(0), rel=1e-5)


class StubMAR(torch.nn.Module):
    """A stand-in MAR: z at a position is its index, and the denoiser's guess depends on x_t, t
    and z."""

    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x, hidden, values, present):
        return torch.arange(64, dtype=torch.float32)[None, :, None].expand(len(x), 64, 8) / 64

    def diffusion(self, x_t, t, z):
        return 0.5 * x_t + t[:, None] * z[:, :1] - 0.1


def test_mar_masked_loss_is_a_direct_computation_of_eps_prediction():
    """The same draws in the same order: the hidden tokens, then t (logit-normal), then eps; two
    draws a token."""
    x = torch.randn(3, 64, 6, generator=torch.Generator().manual_seed(0))
    values, present = condition(3)
    model = StubMAR()
    loss = mar.masked_loss(model, x, values, present, torch.Generator().manual_seed(1), draws=2)
    g = torch.Generator().manual_seed(1)
    hidden = mar.random_mask(3, 64, g)
    x_0, z = x[hidden].repeat(2, 1), model(x, hidden, values, present)[hidden].repeat(2, 1)
    t = torch.sigmoid(0.8 * torch.randn(len(x_0), generator=g) + 0.8)
    eps = torch.randn(x_0.shape, generator=g)
    a = mar.alpha_bar(t)[:, None]
    x_t = a.sqrt() * x_0 + (1 - a).sqrt() * eps
    assert loss.item() == pytest.approx(((model.diffusion(x_t, t, z) - eps) ** 2).mean().item(),
                                        rel=1e-5)


# ---------------------------------------------------- mar.py's network and its per-token denoiser
def layer_norm(z):
    return torch.nn.functional.layer_norm(z, (z.shape[-1],), eps=1e-6)


def test_mar_a_fresh_residual_block_is_the_identity_and_then_adaln_of_its_mlp():
    torch.manual_seed(0)
    block = mar.ResidualBlock(16)
    h, c = torch.randn(5, 16), torch.randn(5, 16)
    assert torch.equal(block(h, c), h)                                      # adaLN-Zero
    torch.nn.init.normal_(block.modulation.weight, std=0.3)
    shift, scale, gate = block.modulation(torch.nn.functional.silu(c)).chunk(3, -1)
    expected = h + gate * block.mlp(layer_norm(h) * (1 + scale) + shift)
    assert torch.allclose(block(h, c), expected, atol=1e-6)


def test_mar_the_denoiser_starts_at_zero_and_reads_t_and_z_through_adaln():
    torch.manual_seed(0)
    head = mar.DiffusionHead(token_dim=6, width=16)
    x_t, t, z = torch.randn(5, 6), torch.rand(5), torch.randn(5, 16)
    assert torch.count_nonzero(head(x_t, t, z)) == 0                        # eps_hat starts at 0
    for p in head.parameters():
        torch.nn.init.normal_(p, std=0.2)
    c = head.time(mar.timestep_embedding(t, 16)) + z                        # time and z, added
    h = head.embed(x_t)
    for block in head.blocks:
        h = block(h, c)
    shift, scale = head.final_modulation(torch.nn.functional.silu(c)).chunk(2, -1)
    expected = head.out(layer_norm(h) * (1 + scale) + shift)
    assert torch.allclose(head(x_t, t, z), expected, atol=1e-5)


def test_mar_z_is_the_modulated_head_of_the_last_block_with_hidden_tokens_replaced():
    torch.manual_seed(0)
    model = mar.MAR(token_dim=6, width=16, depth=2, heads=2)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.2)
    x, hidden = torch.randn(2, 64, 6), torch.rand(2, 64) < 0.5
    values, present = condition(2)
    c = model.condition(values, present)
    h = torch.where(hidden[..., None], model.mask_embedding, model.embed(x)) + model.positions
    for block in model.blocks:
        h = block(h, c)
    shift, scale = model.final_modulation(torch.nn.functional.silu(c))[:, None].chunk(2, -1)
    expected = model.head(layer_norm(h) * (1 + scale) + shift)
    assert torch.allclose(model(x, hidden, values, present), expected, atol=1e-5)
