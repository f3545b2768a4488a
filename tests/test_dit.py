import math

import numpy as np
import pytest
import torch

import data
import dit
import tokenizers


def small_model():
    torch.manual_seed(0)
    return dit.DiT(token_dim=48, width=64, depth=2, heads=4)


def condition(n=8):
    latents = data.sample_latents([[0, 1, 0]] * n, np.random.default_rng(0))
    return data.conditioning(latents, "continuous", train=False)


def test_adaln_zero_block_is_the_identity_at_initialisation():
    block = dit.Block(64, 4)
    x, c = torch.randn(3, 64, 64), torch.randn(3, 64)
    assert torch.equal(block(x, c), x)


def test_model_output_starts_at_zero_and_has_the_token_shape():
    values, present = condition(3)
    out = small_model()(torch.randn(3, 64, 48), torch.rand(3), values, present)
    assert out.shape == (3, 64, 48) and torch.count_nonzero(out) == 0


def test_path_ends_clean_at_t0_and_pure_noise_at_t1():
    x_0, eps = torch.randn(4, 64, 48), torch.randn(4, 64, 48)
    assert torch.equal(dit.noisy(x_0, torch.zeros(4), eps), x_0)
    assert torch.equal(dit.noisy(x_0, torch.ones(4), eps), eps)


def test_sampler_integrates_from_noise_to_the_predicted_image():
    """With a model that always predicts the same x0, Euler lands exactly on it."""
    target = torch.rand(2, 64, 48)

    class Constant(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.Parameter(torch.zeros(1))

        def forward(self, x, t, values, present):
            return target

    values, present = condition(2)
    x = dit.sample(Constant(), values, present, 48, 10, torch.Generator().manual_seed(0))
    assert torch.allclose(x, target, atol=1e-5)


def test_loss_falls_when_overfitting_one_batch():
    model = small_model()
    images = data.make_dataset(["000", "001"], 4, seed=0)[0]
    x_0 = tokenizers.ContinuousTokenizer("pixels").encode(images).float()
    latents = data.make_dataset(["000", "001"], 4, seed=0)[2]
    values, present = data.conditioning(latents, "continuous")
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    losses = []
    for step in range(150):
        loss = dit.flow_loss(model, x_0, values, present, torch.Generator().manual_seed(step % 4))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert np.mean(losses[-10:]) < 0.3 * np.mean(losses[:10])


def test_tokens_round_trip_for_each_tokenizer():
    """Pixels exactly; the codebook and PCA within their quantisation: a mean error of about 0.006,
    and at most 0.1% of the values off by more than 0.25 (a decoder of 0.5 everywhere is off by
    0.3 on average, and on 87% of the values)."""
    images = data.make_dataset(data.COMPOSITIONS, 8, seed=5)[0]
    for name, dim in (("pixels", 48), ("codebook", 48), ("pca", 16)):
        tokenizer = tokenizers.ContinuousTokenizer(name)
        encoded = tokenizer.encode(images)
        assert encoded.shape == (64, 64, dim) and tokenizer.dim == dim
        error = np.abs(tokenizer.decode(encoded) - images)
        assert error.mean() <= (1e-6 if name == "pixels" else 0.01), name
        assert (error > 0.25).mean() <= 1e-3, name
        assert -1.5 <= encoded.min() and encoded.max() <= 1.5 or name == "pca"


def test_training_times_lie_in_zero_one_and_logit_normal_leans_to_noise():
    generator = torch.Generator().manual_seed(0)
    uniform = dit.draw_time(20000, "uniform", generator)
    leaning = dit.draw_time(20000, "logit-normal", generator)
    for t in (uniform, leaning):
        assert t.min() > 0 and t.max() < 1
    assert abs(uniform.median() - 0.5) < 0.02
    assert abs(leaning.median() - torch.sigmoid(torch.tensor(0.8))) < 0.02   # sigmoid(0.8) = 0.69
    assert (leaning < 0.1).float().mean() < 0.01 < (uniform < 0.1).float().mean()


# -------------------------------------------------------------- each method function, held directly
def test_modulate_shifts_and_scales_around_one():
    x, shift, scale = torch.randn(2, 5, 8), torch.randn(2, 1, 8), torch.randn(2, 1, 8)
    assert torch.allclose(dit.modulate(x, shift, scale), x * (1 + scale) + shift)


def test_a_block_is_adaln_attention_then_adaln_mlp():
    """The block against a direct computation, with a condition that moves every shift, scale and
    gate."""
    torch.manual_seed(0)
    block = dit.Block(16, 4)
    torch.nn.init.normal_(block.modulation.weight, std=0.3)
    x, c = torch.randn(2, 9, 16), torch.randn(2, 16)
    modulation = block.modulation(torch.nn.functional.silu(c))[:, None]
    shift1, scale1, gate1, shift2, scale2, gate2 = modulation.chunk(6, -1)

    def norm(z):
        return torch.nn.functional.layer_norm(z, (16,), eps=1e-6)

    h = norm(x) * (1 + scale1) + shift1
    x1 = x + gate1 * block.attention(h, h, h, need_weights=False)[0]
    expected = x1 + gate2 * block.mlp(norm(x1) * (1 + scale2) + shift2)
    assert torch.allclose(block(x, c), expected, atol=1e-6)


def test_a_block_passes_the_gradient_to_its_condition():
    """The condition's gradient through a block is that of the direct computation above: the
    condition and time embeddings learn through every block, not through the final layer alone."""
    torch.manual_seed(0)
    block = dit.Block(16, 4)
    torch.nn.init.normal_(block.modulation.weight, std=0.3)
    x, weights = torch.randn(2, 9, 16), torch.randn(2, 9, 16)
    c = torch.randn(2, 16, requires_grad=True)
    (got,) = torch.autograd.grad((block(x, c) * weights).sum(), c)

    def norm(z):
        return torch.nn.functional.layer_norm(z, (16,), eps=1e-6)
    modulation = block.modulation(torch.nn.functional.silu(c))[:, None]
    shift1, scale1, gate1, shift2, scale2, gate2 = modulation.chunk(6, -1)
    h = norm(x) * (1 + scale1) + shift1
    x1 = x + gate1 * block.attention(h, h, h, need_weights=False)[0]
    expected = x1 + gate2 * block.mlp(norm(x1) * (1 + scale2) + shift2)
    (want,) = torch.autograd.grad((expected * weights).sum(), c)
    assert want.abs().sum() > 0 and torch.allclose(got, want, atol=1e-5)


def test_the_path_is_a_straight_line_between_image_and_noise():
    x_0, eps = torch.randn(3, 64, 48), torch.randn(3, 64, 48)
    t = torch.tensor([0.2, 0.5, 0.9])
    assert torch.allclose(dit.noisy(x_0, t, eps),
                          (1 - t[:, None, None]) * x_0 + t[:, None, None] * eps)


class Guess(torch.nn.Module):
    """A stand-in DiT whose x0 guess depends on x_t and t."""

    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x_t, t, values, present):
        return 0.7 * x_t - t[:, None, None]


def test_flow_loss_is_the_velocity_error_with_t_floored_at_005():
    """The same draws in the same order (t, then eps): ||x0_hat - x_0||^2 / max(t, 0.05)^2."""
    x_0 = torch.randn(256, 4, 3, generator=torch.Generator().manual_seed(0))
    values, present = condition(256)
    for kind in ("logit-normal", "uniform"):
        loss = dit.flow_loss(Guess(), x_0, values, present, torch.Generator().manual_seed(1), kind)
        g = torch.Generator().manual_seed(1)
        t = dit.draw_time(256, kind, g)
        eps = torch.randn(x_0.shape, generator=g)
        x0_hat = Guess()(dit.noisy(x_0, t, eps), t, values, present)
        expected = ((x0_hat - x_0) ** 2 / t.clamp(min=0.05)[:, None, None] ** 2).mean()
        assert loss.item() == pytest.approx(expected.item(), rel=1e-5), kind
    # the floor is used
    assert (dit.draw_time(256, "uniform", torch.Generator().manual_seed(1)) < 0.05).any()


def test_the_sampler_starts_from_unit_noise_and_steps_along_the_velocity():
    """With a model that predicts x0 = 0, each Euler step scales x by t'/t: from t = 1 to t = 0.5
    in one of two steps x is half its starting noise, which has unit variance."""
    zero = Guess()
    zero.forward = lambda x_t, t, values, present: torch.zeros_like(x_t)
    values, present = condition(64)
    # t = 1 -> 0: x0 = 0
    first = dit.sample(zero, values, present, 48, 1, torch.Generator().manual_seed(0))
    assert torch.count_nonzero(first) == 0
    seen = []
    zero.forward = lambda x_t, t, values, present: seen.append(x_t.clone()) or torch.zeros_like(x_t)
    dit.sample(zero, values, present, 48, 2, torch.Generator().manual_seed(0))
    assert abs(seen[0].std().item() - 1) < 0.01 and torch.allclose(seen[1], 0.5 * seen[0])


def test_a_dit_reads_its_condition():
    """Away from its zero start, the network's output moves when only the condition does."""
    model = small_model()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.1)
    x, t = torch.randn(2, 64, 48), torch.rand(2)
    latents = data.sample_latents([[0, 0, 0], [1, 1, 1]], np.random.default_rng(0))
    values, present = data.conditioning(latents, "continuous", train=False)
    with torch.no_grad():
        assert not torch.allclose(model(x, t, values, present),
                                  model(x, t, values.flip(0), present), atol=1e-4)


# ------------------------------------ the backbone every generator copies (test_ladder: one text)
def test_dit_sincos_positions_are_the_sin_and_cos_of_the_row_then_the_column():
    width, side = 16, 3
    positions = dit.sincos_positions(width, side)                          # (9, 16)
    for t in range(side * side):
        row, column = divmod(t, side)                                    # raster order
        expected = []
        for axis in (row, column):
            angles = [axis / 10000 ** (k / 4) for k in range(4)]
            expected += [math.sin(a) for a in angles] + [math.cos(a) for a in angles]
        assert torch.allclose(positions[t], torch.tensor(expected), atol=1e-6), t


def test_dit_timestep_embedding_is_the_sin_and_cos_of_1000_t_at_geometric_frequencies():
    t = torch.tensor([0.0, 0.25, 0.9])
    features = dit.timestep_embedding(t, 8)                                # (3, 8)
    for i, time in enumerate(t.tolist()):
        angles = [1000 * time * math.exp(-math.log(10000) * k / 4) for k in range(4)]
        expected = [math.sin(a) for a in angles] + [math.cos(a) for a in angles]
        assert torch.allclose(features[i], torch.tensor(expected), atol=1e-4), time


def test_dit_condition_embedding_puts_each_hidden_factors_own_null_in_its_place():
    torch.manual_seed(0)
    embedding = dit.ConditionEmbedding(16)
    torch.nn.init.normal_(embedding.null)                  # distinct nulls, as training makes them
    values = torch.randn(2, 7)
    present = torch.tensor([[True, True, True, True], [True, False, True, False]])
    c = embedding(values, present)
    parts = [embedding.project[g](values[:, lo:hi])
             for g, (_, lo, hi) in enumerate(data.COND_GROUPS)]
    assert torch.allclose(c[0], sum(p[0] for p in parts), atol=1e-6)
    hidden = parts[0][1] + embedding.null[1] + parts[2][1] + embedding.null[3]   # colour, position
    assert torch.allclose(c[1], hidden, atol=1e-6)
