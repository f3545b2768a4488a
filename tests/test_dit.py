import numpy as np
import torch

import data
import dit


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
    x_0 = data.ContinuousTokenizer("pixels").encode(data.make_dataset(["000", "001"], 4, seed=0)[0]).float()
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
    images = data.make_dataset(data.COMPOSITIONS, 2, seed=5)[0]
    for name, dim, tolerance in (("pixels", 48, 1e-6), ("codebook", 48, 0.6), ("pca", 16, 0.6)):
        tokens = data.ContinuousTokenizer(name)
        encoded = tokens.encode(images)
        assert encoded.shape == (16, 64, dim) and tokens.dim == dim
        assert np.abs(tokens.decode(encoded) - images).max() <= tolerance
        assert -1.5 <= encoded.min() and encoded.max() <= 1.5 or name == "pca"


def test_training_times_lie_in_zero_one_and_logit_normal_leans_to_noise():
    generator = torch.Generator().manual_seed(0)
    uniform = dit.draw_time(20000, "uniform", generator)
    leaning = dit.draw_time(20000, "logit-normal", generator)
    for t in (uniform, leaning):
        assert t.min() > 0 and t.max() < 1
    assert abs(uniform.median() - 0.5) < 0.02
    assert abs(leaning.median() - torch.sigmoid(torch.tensor(0.8))) < 0.02    # median sigmoid(0.8) = 0.69
    assert (leaning < 0.1).float().mean() < 0.01 < (uniform < 0.1).float().mean()
