"""A1, maskgit.py: mask_ratio, random_mask, masked_loss, remask_count.

The checks read what your functions return, not how you draw your random numbers: the
masks are judged by their statistics over thousands of rows, the loss against the stub
model's own record of what it was shown. Where mask_ratio is wrong (or not written yet), the
checks of the other three functions put a reference schedule in its place, so a wrong
mask_ratio fails its own check alone."""
import itertools
import math

import pytest
import torch
import torch.nn.functional as F

import maskgit

pytestmark = pytest.mark.a1
TOKENS, VOCAB = 64, 10


def reference_schedule(r, schedule="cosine"):
    """gamma(r) as mask_ratio's docstring says, of a tensor r."""
    return 1 - r if schedule == "linear" else torch.cos(math.pi / 2 * r)


@pytest.fixture
def schedule(monkeypatch):
    """For the checks of the functions that call mask_ratio: the student's own where it is right,
    else (wrong, or not written yet) reference_schedule in its place."""
    r = torch.linspace(0, 1, 11)
    try:
        right = all(maskgit.mask_ratio(r, kind).shape == r.shape and torch.allclose(
            maskgit.mask_ratio(r, kind).float(), reference_schedule(r, kind), atol=1e-6)
            for kind in ("cosine", "linear"))
    except Exception:                                          # NotImplementedError, among others
        right = False
    if not right:
        monkeypatch.setattr(maskgit, "mask_ratio", reference_schedule)


def test_mask_ratio_is_the_schedule_at_its_ends_and_between():
    r = torch.tensor([0.0, 1 / 3, 0.5, 1.0])
    got = maskgit.mask_ratio(r)
    want = torch.tensor([1.0, math.cos(math.pi / 6), math.cos(math.pi / 4), 0.0])
    assert got.shape == r.shape, \
        f"mask_ratio keeps the shape of r: expected {tuple(r.shape)}, got {tuple(got.shape)}"
    assert torch.allclose(got, want, atol=1e-6), \
        f"gamma(r) = cos(pi r / 2): expected {want.tolist()}, got {got.tolist()}"
    dense = maskgit.mask_ratio(torch.linspace(0, 1, 101))
    assert (dense[1:] <= dense[:-1]).all(), "gamma(r) must fall as r goes from 0 to 1"
    linear = maskgit.mask_ratio(r, "linear")
    assert torch.allclose(linear, 1 - r, atol=1e-6), \
        f"with schedule='linear', gamma(r) = 1 - r: expected {(1 - r).tolist()}, got " \
        f"{linear.tolist()}"


@pytest.mark.usefixtures("schedule")
def test_random_mask_hides_a_cosine_share_of_random_positions(monkeypatch):
    generator = torch.Generator().manual_seed(0)
    mask = maskgit.random_mask(4000, TOKENS, generator)
    assert mask.shape == (4000, TOKENS) and mask.dtype == torch.bool, \
        f"expected a (4000, {TOKENS}) bool tensor, got {tuple(mask.shape)} {mask.dtype}"
    with monkeypatch.context() as constant:                     # gamma(r) = 1/2 whatever r is
        constant.setattr(maskgit, "mask_ratio", lambda r, schedule="cosine":
                         torch.full_like(torch.as_tensor(r, dtype=torch.float32), 0.5))
        halves = maskgit.random_mask(400, TOKENS, torch.Generator().manual_seed(1)).sum(1)
    if abs(halves.float().mean().item() - TOKENS / 2) < 2:        # (if it asks mask_ratio)
        assert (halves == TOKENS // 2).all(), \
            f"with gamma(r) = 1/2 for every r, every row must hide exactly {TOKENS // 2} of its " \
            f"{TOKENS} positions; got {int(halves.min())} to {int(halves.max())}: draw a count " \
            "per row, then which positions, not each position on its own with probability gamma"
    empty = int((mask.sum(1) == 0).sum())
    assert empty == 0, \
        f"{empty} of 4000 rows hide no position: a row hides ceil(gamma(r) T) of its T " \
        "positions, so at least one while r < 1; rounded down (to the nearest) it hides none " \
        "once gamma(r) T < 1 (< 1/2); positions hidden each on its own leave rows empty by chance"
    # E[ceil(T cos(pi r / 2))] / T for r ~ U(0, 1): 2/pi, plus about half a token for the ceiling
    share, want = mask.float().mean().item(), 2 / math.pi + 0.5 / TOKENS
    assert abs(share - want) < 0.02, \
        f"with r ~ U(0, 1), about {want:.3f} of positions are hidden on average; got {share:.3f}"
    counts = mask.sum(1).float()
    # ceil(T gamma(r)) = T exactly when T cos(pi r / 2) > T - 1, i.e. r < 2/pi acos(1 - 1/T)
    below = 2 / math.pi * math.acos(1 - 1 / TOKENS)
    nearest = 2 / math.pi * math.acos(1 - 0.5 / TOKENS)            # round(T gamma(r)) = T below it
    whole = (counts == TOKENS).float().mean().item()
    assert abs(whole - below) < 0.025, \
        f"a row hides ceil(gamma(r) T) of its T = {TOKENS} positions, rounded up: all {TOKENS} " \
        f"when r < {below:.3f}, in {below:.1%} of rows; got {whole:.1%} (rounded down, a row " \
        f"hides all only at r = 0; rounded to the nearest, when r < {nearest:.3f})"
    # P(ceil(T gamma(r)) <= k) = P(r >= 2/pi acos(k / T)); r drawn once per row
    k = torch.arange(TOKENS + 1).float()
    expected = 1 - 2 / math.pi * torch.acos(k / TOKENS)
    got = (counts[:, None] <= k).float().mean(0)
    worst = int((got - expected).abs().argmax())
    assert (got - expected).abs().max() < 0.04, \
        f"the count per row is ceil(gamma(r) T), r ~ U(0, 1) drawn for each row: at most {worst} " \
        f"hidden in {expected[worst]:.1%} of rows expected, got {got[worst]:.1%}"
    per_position = mask.float().mean(0)
    assert (per_position - share).abs().max() < 0.05, \
        "every position must be equally likely to be hidden; some are hidden far more than others"


class RecordingModel(torch.nn.Module):
    """Returns logits from a table of its own, and remembers the ids it was shown."""

    def __init__(self):
        super().__init__()
        self.mask_id = VOCAB
        table = torch.randn(TOKENS, VOCAB, generator=torch.Generator().manual_seed(1))
        self.table = torch.nn.Parameter(table)
        self.shown = []

    def forward(self, ids, values, present):
        self.shown.append(ids.clone())
        return self.table.expand(len(ids), -1, -1) + 0.1 * ids[..., None].float()


@pytest.mark.usefixtures("schedule")
def test_masked_loss_is_the_cross_entropy_of_the_hidden_ids_only():
    model = RecordingModel()
    ids = torch.randint(VOCAB, (32, TOKENS), generator=torch.Generator().manual_seed(2))
    values, present = torch.zeros(32, 7), torch.ones(32, 4, dtype=torch.bool)
    loss = maskgit.masked_loss(model, ids, values, present, torch.Generator().manual_seed(3))
    assert len(model.shown) == 1, f"expected one call of the model, got {len(model.shown)}"
    shown = model.shown[0]
    hidden = shown == VOCAB
    assert hidden.any(1).all(), \
        "every row the model sees must have [MASK] (id model.mask_id) somewhere"
    assert torch.equal(shown[~hidden], ids[~hidden]), "the visible positions must show the true ids"
    logits = model.table.expand(32, -1, -1) + 0.1 * shown[..., None].float()
    want = F.cross_entropy(logits[hidden], ids[hidden])
    assert loss.shape == (), f"the loss is one number, got shape {tuple(loss.shape)}"
    assert torch.allclose(loss, want, rtol=1e-5), \
        f"expected the mean cross-entropy over the hidden positions, {want.item():.5f}; got " \
        f"{loss.item():.5f}"
    loss.backward()
    assert model.table.grad is not None and model.table.grad.abs().sum() > 0, \
        "the loss must reach the model"


@pytest.mark.usefixtures("schedule")
def test_remask_count_empties_the_mask_at_the_last_step_and_always_commits_one():
    steps = 8
    masked = torch.ones(2, TOKENS, dtype=torch.bool)
    first = maskgit.remask_count(0, steps, TOKENS, masked)
    want = math.floor(math.cos(math.pi / 2 / steps) * TOKENS)
    assert first == want, \
        f"after step 0 of {steps}, floor(gamma(1/{steps}) T) = {want} stay hidden; got {first}"
    assert maskgit.remask_count(steps - 1, steps, TOKENS, masked) == 0, \
        "nothing stays hidden after the last step"
    few = torch.zeros(2, TOKENS, dtype=torch.bool)
    few[:, :3] = True                                         # 3 hidden, the schedule asks for more
    got = maskgit.remask_count(1, steps, TOKENS, few)
    assert got == 2, \
        f"with 3 hidden now, at most 2 may stay hidden (every step commits a token); got {got}"
    got = maskgit.remask_count(1, steps, TOKENS, torch.zeros(2, TOKENS, dtype=torch.bool))
    assert got == 0, \
        "with none hidden (more steps than tokens), none stays hidden, not a negative count; " \
        f"got {got}"
    hidden, counts = masked.clone(), []
    for s in range(steps):                                                   # a whole decode
        counts.append(maskgit.remask_count(s, steps, TOKENS, hidden))
        hidden = torch.zeros_like(hidden)
        hidden[:, :counts[-1]] = True
    assert all(a > b for a, b in itertools.pairwise(counts)) and counts[-1] == 0, \
        f"the hidden count must fall at every step to 0; got {counts}"
    linear = [maskgit.remask_count(s, steps, TOKENS, masked, "linear") for s in range(steps)]
    want = [TOKENS * (steps - 1 - s) // steps for s in range(steps)]
    assert linear == want, \
        f"with schedule='linear', floor((1 - (s+1)/S) T) stay hidden: expected {want}, got {linear}"


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


@pytest.mark.usefixtures("schedule")
def test_masked_loss_trains_every_weight_of_a_real_maskgit():
    """On maskgit.py's own network the loss's gradient reaches every weight: the embedding, the
    condition's (values and present as given), each block's and the head's."""
    model = with_weights_drawn(maskgit.MaskGIT(VOCAB, width=32, depth=2, heads=4))
    ids = torch.randint(VOCAB, (8, TOKENS), generator=torch.Generator().manual_seed(9))
    values, present = condition(8)
    loss = maskgit.masked_loss(model, ids, values, present, torch.Generator().manual_seed(10))
    missing = untrained(model, loss)
    assert not missing, \
        f"the loss must train the whole network; no gradient reaches {missing}: hand the model " \
        "the condition as given (values, present), and detach nothing on the way to the loss"
