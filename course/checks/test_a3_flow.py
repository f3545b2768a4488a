"""A3, dit.py: noisy, flow_loss and sample (rectified flow, x_0 prediction).

Convention (the hint in TASK.md): t = 0 is the image, t = 1 the noise, a straight path
between them. The stub models remember what they were shown, so the checks read the t and
eps you drew from your own x_t, whatever order you drew them in."""
import itertools

import pytest
import torch

import dit

pytestmark = pytest.mark.a3
# What the loss is, in words: its weight is the student's to work out (the hint), never printed
VELOCITY = ("the mean over every value of the squared velocity error (the velocity x0_hat implies "
            "at (x_t, t) against the path's), written with the x_0 error, t floored at 0.05")


def test_noisy_is_the_straight_path_from_image_to_noise():
    generator = torch.Generator().manual_seed(0)
    x_0, eps = torch.randn(3, 4, 5, generator=generator), torch.randn(3, 4, 5, generator=generator)
    t = torch.tensor([0.0, 0.25, 1.0])
    got = dit.noisy(x_0, t, eps)
    assert got.shape == x_0.shape, \
        f"x_t has the shape of x_0 {tuple(x_0.shape)}, got {tuple(got.shape)}"
    assert torch.allclose(got[0], x_0[0], atol=1e-6), "at t = 0, x_t is the image x_0"
    assert torch.allclose(got[2], eps[2], atol=1e-6), "at t = 1, x_t is the noise eps"
    assert torch.allclose(got[1], 0.75 * x_0[1] + 0.25 * eps[1], atol=1e-6), \
        "at t = 0.25, x_t = 0.75 x_0 + 0.25 eps"


class RecordingDiT(torch.nn.Module):
    """Predicts x0_hat = x_t * a + b (a, b learnable), and remembers x_t and t."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(0.3))
        self.b = torch.nn.Parameter(torch.tensor(0.1))
        self.calls = []

    def forward(self, x_t, t, values, present):
        self.calls.append((x_t.detach().clone(), t.detach().clone()))
        return x_t * self.a + self.b


def test_flow_loss_draws_t_and_eps_and_weighs_the_x0_error_as_a_velocity_error():
    model = RecordingDiT()
    x_0 = torch.rand(4096, 2, 3, generator=torch.Generator().manual_seed(1)) * 2 - 1
    values, present = torch.zeros(4096, 7), torch.ones(4096, 4, dtype=torch.bool)
    loss = dit.flow_loss(model, x_0, values, present, torch.Generator().manual_seed(2))
    assert len(model.calls) == 1, f"expected one call of the model, got {len(model.calls)}"
    x_t, t = model.calls[0]
    assert t.shape == (4096,), f"one t per image: expected shape (4096,), got {tuple(t.shape)}"
    logit = torch.log(t / (1 - t))                                       # the default: logit-normal
    assert 0 < t.min() and t.max() < 1 \
        and abs(logit.mean().item() - 0.8) < 0.05 and abs(logit.std().item() - 0.8) < 0.05, \
        f"t = draw_time(n, 'logit-normal', generator): logit(t) ~ N(0.8, 0.8^2) expected; got " \
        f"mean {logit.mean():.3f}, std {logit.std():.3f}"
    away = t > 0.05                                                  # eps = (x_t - (1 - t) x_0) / t
    eps = (x_t[away] - (1 - t[away, None, None]) * x_0[away]) / t[away, None, None]
    assert abs(eps.mean().item()) < 0.03 and abs(eps.std().item() - 1) < 0.03, \
        "x_t = noisy(x_0, t, eps) with eps ~ N(0, 1); the eps read back has mean " \
        f"{eps.mean():.3f}, std {eps.std():.3f}"
    x0_hat = x_t * 0.3 + 0.1
    want = ((x0_hat - x_0) ** 2 / t.clamp(min=0.05)[:, None, None] ** 2).mean()
    assert torch.allclose(loss, want, rtol=1e-4), \
        f"the loss is {VELOCITY}: expected {want.item():.5f}, got {loss.item():.5f}"
    loss.backward()
    assert model.a.grad is not None and model.a.grad != 0, "the loss must reach the model"
    uniform = RecordingDiT()                                         # about 5% of t below the floor
    loss = dit.flow_loss(uniform, x_0, values, present, torch.Generator().manual_seed(2),
                         time_dist="uniform")
    x_t, t = uniform.calls[0]
    assert abs(t.mean().item() - 0.5) < 0.03 and abs(t.std().item() - 0.2887) < 0.02, \
        "time_dist='uniform': t ~ U(0, 1), mean 0.5 and std 0.289 expected; got mean " \
        f"{t.mean():.3f}, std {t.std():.3f}"
    want = ((x_t * 0.3 + 0.1 - x_0) ** 2 / t.clamp(min=0.05)[:, None, None] ** 2).mean()
    assert torch.allclose(loss, want, rtol=1e-4), \
        f"time_dist='uniform': the loss is {VELOCITY}: expected {want.item():.5f}, got " \
        f"{loss.item():.5f}"


def test_flow_loss_draws_only_from_the_generator_it_is_given():
    """A run saves its generator in each checkpoint and --resume restores it: a draw from torch's
    global random state instead is not restored, and the resumed run trains on other noise."""
    x_0 = torch.rand(64, 2, 3, generator=torch.Generator().manual_seed(1)) * 2 - 1
    values, present = torch.zeros(64, 7), torch.ones(64, 4, dtype=torch.bool)
    shown, untouched = [], []
    with torch.random.fork_rng(devices=[]):                                 # the global state
        for seed in (0, 1):
            torch.manual_seed(seed)
            before, model = torch.get_rng_state(), RecordingDiT()
            dit.flow_loss(model, x_0, values, present, torch.Generator().manual_seed(2))
            shown.append(model.calls[0])
            untouched.append(torch.equal(before, torch.get_rng_state()))
    (x_t, t), (other_x_t, other_t) = shown
    changed = [name for name, a, b in (("t", t, other_t), ("x_t", x_t, other_x_t))
               if not torch.equal(a, b)]
    said = f"{' and '.join(changed)} changed" if changed else "torch's global random state moved"
    assert not changed and all(untouched), \
        "draw t and eps with the generator flow_loss is given (the run's, saved for --resume): " \
        f"with the same generator and another torch.manual_seed, {said}"


class ConstantDiT(torch.nn.Module):
    """Always predicts the same clean tokens; remembers each x_t and t of the sampler."""

    def __init__(self, target):
        super().__init__()
        self.dummy = torch.nn.Parameter(torch.zeros(()))             # so the sampler finds a device
        self.target, self.calls = target, []

    def forward(self, x_t, t, values, present):
        self.calls.append((x_t.clone(), t.clone()))
        return self.target.expand(len(x_t), -1, -1)


def test_sample_integrates_from_noise_to_the_predicted_image_along_a_straight_line():
    target = torch.rand(1, 64, 3, generator=torch.Generator().manual_seed(3))
    model = ConstantDiT(target)
    values, present = torch.zeros(5, 7), torch.ones(5, 4, dtype=torch.bool)
    out = dit.sample(model, values, present, 3, 10, torch.Generator().manual_seed(4))
    assert out.shape == (5, 64, 3), f"expected (5, 64, 3) tokens, got {tuple(out.shape)}"
    assert len(model.calls) == 10, f"10 Euler steps call the model 10 times; got {len(model.calls)}"
    times = [float(t[0]) for _, t in model.calls]
    falling = all(a > b for a, b in itertools.pairwise(times))
    assert abs(times[0] - 1) < 1e-6 and abs(times[-1] - 0.1) < 1e-6 and falling, \
        "the sampler starts at t = 1 (noise) and steps down evenly to t = 1/10; got t = " \
        f"{[round(t, 3) for t in times]}"
    noise = model.calls[0][0]
    assert abs(noise.std().item() - 1) < 0.15, \
        f"x_1 is standard normal noise; its std is {noise.std():.3f}"
    for x_t, t in model.calls:                                     # the straight path to the target
        expected = t[0] * noise + (1 - t[0]) * target
        assert torch.allclose(x_t, expected, atol=1e-4), \
            "with a model that always predicts the same x_0, x_t = t x_1 + (1 - t) x_0 " \
            f"exactly; wrong at t = {t[0]:.2f}"
    assert torch.allclose(out, target.expand_as(out), atol=1e-4), \
        "at t = 0 the sampler must land on the predicted x_0"


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


def test_flow_loss_trains_every_weight_of_a_real_dit():
    """On dit.py's own network the loss's gradient reaches every weight: the token embedding, the
    time's and the condition's (values and present as given), each block's and the head's."""
    model = with_weights_drawn(dit.DiT(4, width=32, depth=2, heads=4))
    x_0 = torch.randn(8, 64, 4, generator=torch.Generator().manual_seed(9))
    values, present = condition(8)
    loss = dit.flow_loss(model, x_0, values, present, torch.Generator().manual_seed(10))
    missing = untrained(model, loss)
    assert not missing, \
        f"the loss must train the whole network; no gradient reaches {missing}: hand the model " \
        "x_t, t and the condition as given, and detach nothing on the way to the loss"
