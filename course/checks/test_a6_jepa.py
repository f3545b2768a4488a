"""A6, jepa_maskgit.py: jepa_losses and target_momentum.

The check hands jepa_losses its own mask (it replaces random_mask, under either name: the one
jepa_maskgit imports and maskgit's), a small MaskGIT, and a target that differs from it, then
compares both losses with the formula in jepa_maskgit.py's docstring, computed here from the
networks' own forward passes (the hidden states read by hooks on their blocks)."""
import copy

import pytest
import torch

import jepa_maskgit
import maskgit

pytestmark = pytest.mark.a6
VOCAB, WIDTH, DEPTH, LAYERS = 12, 32, 3, [1, 2]


def test_target_momentum_rises_linearly_from_its_start_to_one():
    assert jepa_maskgit.target_momentum(0, 1000, 0.996) == pytest.approx(0.996), \
        "at step 0 the momentum is the start value"
    assert jepa_maskgit.target_momentum(1000, 1000, 0.996) == pytest.approx(1.0), \
        "at the last step the momentum is 1"
    assert jepa_maskgit.target_momentum(500, 1000, 0.99) == pytest.approx(0.995), \
        "it rises linearly: halfway, 0.995"
    for steps, start in ((1000, 0.996), (1000, 0.99), (40, 0.9)):      # along the whole line
        for step in sorted({1, steps // 10, steps // 4, steps // 3, 2 * steps // 3,
                            3 * steps // 4, steps - 1}):
            got = jepa_maskgit.target_momentum(step, steps, start)
            want = start + (1 - start) * step / steps
            assert got == pytest.approx(want, rel=1e-6), \
                f"it rises linearly from start to 1, at every step, not only at the ends and " \
                f"midway: at step {step} of {steps} (start {start}) expected {want:.6f}, got " \
                f"{float(got):.6f}"


@pytest.fixture
def setting(monkeypatch):
    torch.manual_seed(0)
    model = maskgit.MaskGIT(VOCAB, WIDTH, DEPTH, heads=4)
    with torch.no_grad():                                                  # a trained-looking model
        for p in model.parameters():
            p.add_(0.1 * torch.randn(p.shape))
    target = copy.deepcopy(model)
    with torch.no_grad():
        for p in target.parameters():                                        # the EMA lags behind
            p.add_(0.05 * torch.randn(p.shape))
    target.requires_grad_(False)
    predictors = jepa_maskgit.make_predictors(WIDTH, LAYERS)
    ids = torch.randint(VOCAB, (6, 64), generator=torch.Generator().manual_seed(1))
    mask = torch.rand(6, 64, generator=torch.Generator().manual_seed(2)) < 0.5
    for module in (jepa_maskgit, maskgit):                     # either way of calling it
        monkeypatch.setattr(module, "random_mask", lambda *args, **kwargs: mask.clone())
    values = torch.randn(6, 7, generator=torch.Generator().manual_seed(4))
    present = (torch.arange(6)[:, None] + torch.arange(4)) % 3 != 0   # each group hidden in some
    return model, target, predictors, ids, mask, values, present


def states(model, ids, values, present):
    """The network's logits (B, T, V) and every block's output, read by hooks on its blocks."""
    outputs = []
    hooks = [block.register_forward_hook(lambda m, args, out: outputs.append(out))
             for block in model.blocks]
    logits = model(ids, values, present)
    for hook in hooks:
        hook.remove()
    return logits, outputs


def expected(model, target, predictors, ids, mask, values, present):
    """Both losses by the docstring's formula: the mean over hidden positions of -log p(true id),
    and the mean over layers of the mean squared error to the layer-normed target."""
    logits, context = states(model, torch.where(mask, model.mask_id, ids), values, present)
    log_p = logits.float().log_softmax(-1).gather(-1, ids[..., None])[..., 0]
    cross_entropy = -log_p[mask].sum() / mask.sum()
    with torch.no_grad():
        _, targets = states(target, ids, values, present)
    errors = []
    for predictor, layer in zip(predictors, LAYERS):
        h = targets[layer][mask]
        normed = (h - h.mean(-1, keepdim=True)) / (h.var(-1, unbiased=False, keepdim=True)
                                                   + 1e-5).sqrt()
        errors.append(((predictor(context[layer][mask]) - normed) ** 2).sum() / normed.numel())
    return cross_entropy, sum(errors) / len(errors)


def test_both_losses_follow_the_formula(setting):
    model, target, predictors, ids, _, values, present = setting
    cross_entropy, jepa = jepa_maskgit.jepa_losses(model, target, predictors, ids, values, present,
                                                   torch.Generator().manual_seed(3), LAYERS)
    want_ce, want_jepa = expected(*setting)
    assert torch.allclose(cross_entropy, want_ce, rtol=1e-5), \
        "cross-entropy of the hidden ids given the masked input: expected " \
        f"{want_ce.item():.5f}, got {cross_entropy.item():.5f}"
    assert torch.allclose(jepa, want_jepa, rtol=1e-5), \
        f"JEPA loss = mean over layers of || predictor_l(h_l at hidden positions) - LN(target's " \
        "h_l there) ||^2 " \
        f"(mean squared error): expected {want_jepa.item():.5f}, got {jepa.item():.5f}"


def test_the_target_gets_no_gradient_and_every_part_of_the_context_model_does(setting):
    model, target, predictors, ids, _, values, present = setting
    target.requires_grad_(True)                               # so only stop-gradient can protect it
    cross_entropy, jepa = jepa_maskgit.jepa_losses(model, target, predictors, ids, values, present,
                                                   torch.Generator().manual_seed(3), LAYERS)
    below = [(name, p) for name, p in model.named_parameters()          # all but the readout
             if not name.startswith(("final_modulation", "head"))]
    from_jepa = torch.autograd.grad(jepa, [p for _, p in below], allow_unused=True,
                                    retain_graph=True)
    (cross_entropy + jepa).backward()
    leaked = [name for name, p in target.named_parameters()
              if p.grad is not None and p.grad.abs().sum() > 0]
    assert not leaked, \
        f"stop-gradient: the target must get no gradient; it got one in {', '.join(leaked[:3])} ..."
    parts = [*(("predictors." + n, p) for n, p in predictors.named_parameters()),
             *model.named_parameters()]
    unreached = [name for name, p in parts if p.grad is None or not p.grad.abs().sum() > 0]
    assert not unreached, \
        "the two losses must train every weight of the context model and of the predictors; no " \
        f"gradient reaches {', '.join(unreached[:3])}{' ...' * (len(unreached) > 3)}"
    unshaped = [name for (name, _), g in zip(below, from_jepa)
                if g is None or not g.abs().sum() > 0]
    assert not unshaped, \
        "the JEPA loss must reach the context model through the predicted layers' hidden states " \
        f"(do not detach them); it gives no gradient to {', '.join(unshaped[:3])} ..."
