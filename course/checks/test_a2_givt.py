"""A2, givt.py: log_density and masked_loss.

The density is checked against torch.distributions in float64, and in cases where a plain
sum of exponentials underflows to log(0) = -inf: a tiny scale, a token far from every mean."""
import math

import pytest
import torch

import givt

pytestmark = pytest.mark.a2


def reference(x, log_weights, means, scales):
    """log p(x) under the mixture, in float64 with torch.distributions."""
    d = torch.distributions
    mixture = d.MixtureSameFamily(d.Categorical(logits=log_weights.double()),
                                  d.Independent(d.Normal(means.double(), scales.double()), 1))
    return mixture.log_prob(x.double())


def mixture(shape, k, c, seed, scale=1.0):
    generator = torch.Generator().manual_seed(seed)
    log_weights = torch.randn(*shape, k, generator=generator).log_softmax(-1)
    means = torch.randn(*shape, k, c, generator=generator)
    scales = scale * (0.2 + torch.rand(*shape, k, c, generator=generator))
    return log_weights, means, scales


def test_log_density_matches_the_mixture_of_diagonal_gaussians():
    log_weights, means, scales = mixture((5, 3), 4, 6, seed=0)
    x = torch.randn(5, 3, 6, generator=torch.Generator().manual_seed(1))
    got = givt.log_density(x, log_weights, means, scales)
    want = reference(x, log_weights, means, scales)
    assert got.shape == (5, 3), \
        f"one log-density per token: expected shape (5, 3), got {tuple(got.shape)}"
    assert torch.allclose(got.double(), want, rtol=1e-4, atol=1e-4), \
        "log p(x) = logsumexp_k [log pi_k + sum_d log N(x_d; mu_kd, sigma_kd^2)]: expected " \
        f"{want[0].tolist()}, got {got[0].tolist()} (first row)"


def test_log_density_is_finite_and_right_where_exponentials_underflow():
    log_weights, means, scales = mixture((4,), 3, 48, seed=2, scale=1e-3)  # sigma 0.0002..0.0012
    x = means[:, 0] + 0.05                                        # dozens of sigmas from every mean
    got = givt.log_density(x, log_weights, means, scales)
    want = reference(x, log_weights, means, scales)
    assert torch.isfinite(got).all(), \
        "log p(x) must stay finite when every component's density underflows in float32 (use " \
        f"logsumexp); got {got.tolist()}"
    assert torch.allclose(got.double(), want, rtol=1e-4), \
        f"expected {want.tolist()}, got {got.tolist()}"
    near = givt.log_density(means[:, 1], log_weights, means, scales)     # at a mean: a huge density
    assert torch.isfinite(near).all() and (near > 0).all(), \
        "a tiny scale gives a large, finite, positive log-density"


class StubGIVT(torch.nn.Module):
    """Returns one mixture at every position of a row, its means moved the further the more of
    the row it hides (so a row's tokens score alike, and rows that hide more score worse: a mean
    per image, then over images, is far from the mean over the hidden tokens); remembers the
    masks it was given and the mixtures it returned."""

    def __init__(self, k=3, c=5):
        super().__init__()
        log_weights, means, scales = mixture((), k, c, seed=4)
        self.logits = torch.nn.Parameter(log_weights)
        self.means = torch.nn.Parameter(means)
        self.log_scales = torch.nn.Parameter(scales.log())
        self.masks, self.returned = [], []

    def forward(self, x, mask, values, present):
        self.masks.append(mask.clone())
        b, t = mask.shape
        away = 4 * mask.float().mean(1)[:, None, None, None]                # (B, 1, 1, 1)
        returned = (self.logits.log_softmax(-1).expand(b, t, *self.logits.shape),
                    self.means.expand(b, t, *self.means.shape) + away,
                    self.log_scales.exp().expand(b, t, *self.log_scales.shape))
        self.returned.append(tuple(p.detach() for p in returned))
        return returned


def test_masked_loss_is_the_hidden_tokens_nll_per_value():
    model = StubGIVT()
    x = torch.randn(16, 64, 5, generator=torch.Generator().manual_seed(5))
    values, present = torch.zeros(16, 7), torch.ones(16, 4, dtype=torch.bool)
    loss = givt.masked_loss(model, x, values, present, torch.Generator().manual_seed(6))
    assert len(model.masks) == 1, f"expected one call of the model, got {len(model.masks)}"
    mask = model.masks[0]
    assert mask.shape == (16, 64) and mask.dtype == torch.bool and mask.any(1).all(), \
        "the model must get a (B, T) bool mask that hides at least one token per row"
    nll = -reference(x, *model.returned[0]) / 5                           # (B, T) per token value
    want = nll[mask].mean()
    per_image = ((nll * mask).sum(1) / mask.sum(1)).mean()
    why = (" (a mean per image, then over the images? every hidden token counts alike)"
           if torch.allclose(loss.double(), per_image, rtol=1e-4) else "")
    assert torch.allclose(loss.double(), want, rtol=1e-4), \
        f"expected the mean negative log-likelihood of the batch's hidden tokens per token value " \
        f"(divided by C = 5), {want.item():.5f}; got {loss.item():.5f}{why}"
    loss.backward()
    assert model.means.grad.abs().sum() > 0, "the loss must reach the mixture's parameters"
    assert not math.isnan(loss.item())


# ------------------------------------------------- the loss trains every weight of the real network
def with_weights_drawn(model):
    """model with every weight drawn from N(0, 0.2^2), away from adaLN-Zero's zero start (where a
    zero gate or head passes no gradient back, rightly)."""
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.2 * torch.randn(p.shape, generator=generator))
    return model


def condition(n):
    """values (n, 7) and present (n, 4): each factor group present in some rows, hidden in
    others."""
    present = (torch.arange(n)[:, None] + torch.arange(4)) % 3 != 0
    return torch.randn(n, 7, generator=torch.Generator().manual_seed(8)), present


def untrained(model, loss):
    """What the loss's gradient does not reach: 'a, b, c and 4 more' of model's parameters."""
    assert loss.requires_grad, \
        "the loss carries no gradient: is it computed under torch.no_grad(), or detached?"
    loss.backward()
    missing = [name for name, p in model.named_parameters()
               if p.grad is None or not p.grad.abs().sum() > 0]
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return ", ".join(missing[:3]) + more


def test_masked_loss_trains_every_weight_of_a_real_givt():
    """On givt.py's own network the loss's gradient reaches every weight: the token embedding, the
    [MASK] embedding, the condition's (values and present as given), each block's and the head's."""
    model = with_weights_drawn(givt.GIVT(4, components=3, width=32, depth=2, heads=4))
    x = torch.randn(8, 64, 4, generator=torch.Generator().manual_seed(9))
    values, present = condition(8)
    loss = givt.masked_loss(model, x, values, present, torch.Generator().manual_seed(10))
    missing = untrained(model, loss)
    assert not missing, \
        f"the loss must train the whole network; no gradient reaches {missing}: hand the model " \
        "the hidden mask and the condition as given, and detach nothing on the way to the loss"
