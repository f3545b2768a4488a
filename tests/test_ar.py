"""ar.py: the causal order, the two next-token likelihoods, raster sampling, and learning."""
import math

import numpy as np
import pytest
import torch

from studies import ar
import data

VOCAB, DIM = 64, 12


def small(head):
    torch.manual_seed(0)
    return ar.AR(head, token_dim=DIM, vocab_size=VOCAB, components=3, width=64, depth=2, heads=4)


def condition(n):
    latents = data.sample_latents([[1, 1, 1]] * n, np.random.default_rng(0))
    return data.conditioning(latents, "continuous", train=False)


def tokens(head, n=4):
    g = torch.Generator().manual_seed(1)
    if head == "categorical":
        return torch.randint(VOCAB, (n, 64), generator=g)
    return torch.randn(n, 64, DIM, generator=g)


@pytest.mark.parametrize("head", ["categorical", "gmm"])
def test_no_slot_sees_a_later_token(head):
    """Change token j: slots 0..j, which see tokens 0..i-1 only, do not move; slot j+1 does."""
    model = small(head)
    for block in model.blocks:                                            # leave the identity start
        torch.nn.init.normal_(block.modulation.weight, std=0.2)
    torch.nn.init.normal_(model.head.weight, std=0.2)
    x = tokens(head, 2)
    values, present = condition(2)
    changed = x.clone()
    j = 37
    changed[:, j] = (changed[:, j] + 5) % VOCAB if head == "categorical" else changed[:, j] + 1
    first = model(x[:, :-1], values, present)                              # teacher forcing's input
    second = model(changed[:, :-1], values, present)
    first, second = (first, second) if head == "categorical" else (first[1], second[1])
    # slot i sees tokens 0..i-1, so slots 0..j are blind to token j; slot j+1 reads it
    assert torch.allclose(first[:, :j + 1], second[:, :j + 1], atol=1e-6)
    assert not torch.allclose(first[:, j + 1], second[:, j + 1], atol=1e-4)


def test_the_categorical_loss_starts_at_log_vocabulary_size():
    values, present = condition(4)
    loss = ar.next_token_loss(small("categorical"), tokens("categorical"), values, present)
    assert abs(loss.item() - math.log(VOCAB)) < 1e-4


def test_the_mixture_loss_is_a_direct_computation():
    model = small("gmm")
    torch.nn.init.normal_(model.head.weight, std=0.1)
    x = tokens("gmm", 3)
    values, present = condition(3)
    with torch.no_grad():
        log_weights, means, scales = (p.double() for p in model(x[:, :-1], values, present))
    direct = 0.0
    for b in range(3):
        for i in range(64):
            mixture = sum(math.exp(log_weights[b, i, k]) *
                          math.prod(math.exp(-0.5 * ((x[b, i, d] - means[b, i, k, d])
                                                     / scales[b, i, k, d]) ** 2)
                                    / (scales[b, i, k, d] * math.sqrt(2 * math.pi))
                                    for d in range(DIM))
                          for k in range(3))
            direct -= math.log(mixture)
    loss = ar.next_token_loss(model, x, values, present)
    assert abs(loss.item() - direct / (3 * 64 * DIM)) < 1e-4


@pytest.mark.parametrize("head", ["categorical", "gmm"])
def test_sampling_draws_64_tokens_one_at_a_time_in_raster_order(head, monkeypatch):
    model = small(head).eval()
    seen = []
    forward = model.forward
    monkeypatch.setattr(model, "forward",
                        lambda prefix, *rest: seen.append(prefix.clone()) or forward(prefix, *rest))
    values, present = condition(2)
    x = ar.sample(model, values, present, torch.Generator().manual_seed(0))
    assert x.shape == ((2, 64) if head == "categorical" else (2, 64, DIM))
    assert [p.shape[1] for p in seen] == list(range(64))                    # one step per token
    assert all(torch.equal(p, x[:, :p.shape[1]]) for p in seen)         # each step extends the last
    if head == "categorical":
        assert x.min() >= 0 and x.max() < VOCAB


def test_greedy_sampling_takes_the_likeliest_id():
    model = small("categorical").eval()
    with torch.no_grad():
        model.head.bias[7] = 5.0                                            # id 7 everywhere
    values, present = condition(2)
    x = ar.sample(model, values, present, torch.Generator().manual_seed(0), temperature=0)
    assert (x == 7).all()


@pytest.mark.parametrize("head", ["categorical", "gmm"])
def test_the_loss_falls_when_overfitting_one_batch(head):
    model = small(head)
    x = tokens(head)
    values, present = condition(4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    first = None
    for _ in range(60):
        loss = ar.next_token_loss(model, x, values, present)
        first = first if first is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.5 * first if head == "categorical" else loss.item() < first - 0.5


def test_bad_head_and_tokenizer_are_refused(capsys, tmp_path):
    from scripts import refused
    code, said = refused(ar, ["--head", "softmax", "--out", str(tmp_path / "a")], capsys)
    assert code == 2 and "categorical" in said and "gmm" in said
    code, said = refused(ar, ["--tokenizer", "pixels", "--out", str(tmp_path / "b")], capsys)
    assert code == 2 and "--tokenizer pixels" in said and "codebook ids" in said
    code, said = refused(ar, ["--temperature", "-1", "--out", str(tmp_path / "c")], capsys)
    assert code == 2 and "--temperature must be" in said and "-1" in said


def test_the_categorical_loss_scores_token_i_with_the_slot_that_saw_tokens_before_it():
    """A spy network: it is shown tokens 0..62, and slot i's logits, scored against token i."""
    model = small("categorical")
    torch.nn.init.normal_(model.head.weight, std=0.2)
    seen = []
    forward = model.forward
    model.forward = lambda prefix, *rest: seen.append(prefix.clone()) or forward(prefix, *rest)
    x = tokens("categorical", 3)
    values, present = condition(3)
    loss = ar.next_token_loss(model, x, values, present)
    assert torch.equal(seen[0], x[:, :-1])                          # never token 63, nor any answer
    logits = forward(x[:, :-1], values, present)
    direct = -logits.log_softmax(-1).gather(-1, x[..., None])[..., 0].mean()
    assert loss.item() == pytest.approx(direct.item(), rel=1e-5)


def test_sampling_draws_ids_from_the_head_not_its_most_likely_one():
    model = small("categorical").eval()
    with torch.no_grad():
        model.head.bias.fill_(-30.0)
        model.head.bias[3], model.head.bias[7] = math.log(0.7), math.log(0.3)
    values, present = condition(40)
    x = ar.sample(model, values, present, torch.Generator().manual_seed(0))
    assert abs((x == 7).float().mean().item() - 0.3) < 0.02              # 2,560 draws of p(7) = 0.3
