import math

import numpy as np
import torch

import data
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
    got2 = givt.log_density(x, torch.log(torch.tensor([[0.5, 0.5]])), mu.repeat(1, 2, 1), sigma.repeat(1, 2, 1))
    assert abs(got2.item() - direct) < 1e-6


def test_gmm_scales_stay_positive_and_weights_normalised():
    torch.manual_seed(0)
    model = givt.GIVT(48, components=4, width=64, depth=2)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=1.0)                                   # far from initialisation
    values, present = condition(3)
    log_weights, means, scales = model(torch.randn(3, 64, 48), torch.rand(3, 64) < 0.5, values, present)
    assert means.shape == scales.shape == (3, 64, 4, 48) and log_weights.shape == (3, 64, 4)
    assert (scales >= givt.SCALE_FLOOR).all()
    assert torch.allclose(log_weights.exp().sum(-1), torch.ones(3, 64), atol=1e-5)


def test_gmm_components_start_distinct():
    model = givt.GIVT(48, components=4, width=64, depth=2)
    values, present = condition(1)
    _, means, _ = model(torch.zeros(1, 64, 48), torch.ones(1, 64, dtype=torch.bool), values, present)
    assert (means[0, 0, 0] - means[0, 0, 1]).abs().max() > 0.1


def overfit(loss_fn, model, steps=120, lr=2e-3):
    x = torch.as_tensor(data.patchify(data.make_dataset(["000", "100"], 4, seed=0)[0], 4)) * 2 - 1
    values, present = data.conditioning(data.make_dataset(["000", "100"], 4, seed=0)[2], "continuous")
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
    assert (leaning < 0.1).float().mean() < 0.01 < (mar.draw_time(20000, "uniform", generator) < 0.1).float().mean()
    torch.manual_seed(0)
    loss = lambda m, x, v, p, g: mar.masked_loss(m, x, v, p, g, time_dist="uniform")  # the default: above
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
    """More decoding steps than tokens: once every token is drawn, none is hidden and drawn again."""
    torch.manual_seed(0)
    values, present = condition(2)
    drawn = []
    denoise = mar.denoise
    monkeypatch.setattr(mar, "denoise", lambda model, z, *args: drawn.append(len(z)) or denoise(model, z, *args))
    model = mar.MAR(48, width=32, depth=1)
    for steps in (10, 64, 66, 100):
        drawn.clear()
        mar.sample(model, values, present, 48, steps, torch.Generator().manual_seed(0), diffusion_steps=1)
        assert sum(drawn) == 2 * 64, (steps, sum(drawn))
    assert mar.remask_count(70, 100, 64, torch.zeros(2, 64, dtype=torch.bool)) == 0
