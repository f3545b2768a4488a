"""A4, dit.py: modulate, Block.__init__ and Block.forward (adaLN-Zero).

The checks are about behaviour, not names: a new block is the identity; every parameter
that starts at zero still gets a gradient; once trained a little, the block mixes tokens
through attention and listens to the condition. Your answer also has to be what the other
generator files use: paste it into their blanked copies once these checks pass."""
import pytest
import torch

import dit

pytestmark = pytest.mark.a4
WIDTH, HEADS = 32, 4


def test_modulate_shifts_and_scales():
    generator = torch.Generator().manual_seed(0)
    x, shift, scale = (torch.randn(2, 5, WIDTH, generator=generator) for _ in range(3))
    assert torch.allclose(dit.modulate(x, shift, scale), x * (1 + scale) + shift, atol=1e-6), \
        "modulate(x, shift, scale) = x (1 + scale) + shift"
    zero = torch.zeros(2, 1, WIDTH)
    assert torch.equal(dit.modulate(x, zero, zero), x), "zero shift and scale leave x as it is"


def inputs(seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 10, WIDTH, generator=generator)
    return x, torch.randn(3, WIDTH, generator=generator)


def test_a_new_block_is_the_identity():
    torch.manual_seed(0)
    block = dit.Block(WIDTH, HEADS)
    x, c = inputs(1)
    out = block(x, c)
    assert out.shape == x.shape, \
        f"a block keeps the shape (B, T, D) = {tuple(x.shape)}; got {tuple(out.shape)}"
    assert torch.allclose(out, x, atol=1e-6), \
        "adaLN-Zero: the gates start at zero, so a new block returns its input unchanged, " \
        "whatever c is"


def test_the_zero_initialised_modulation_still_gets_a_gradient():
    torch.manual_seed(0)
    block = dit.Block(WIDTH, HEADS)
    zeros = {name for name, p in block.named_parameters() if p.abs().sum() == 0}
    assert zeros, \
        "adaLN-Zero starts the modulation (shift, scale, gate) at zero: no parameter starts at " \
        "zero here"
    x, c = inputs(2)
    weights = torch.randn(x.shape, generator=torch.Generator().manual_seed(3))
    (block(x, c) * weights).sum().backward()
    alive = [name for name, p in block.named_parameters()
             if name in zeros and p.grad is not None and p.grad.abs().sum() > 0]
    assert alive, \
        f"the zero-initialised parameters ({', '.join(sorted(zeros))}) must get a gradient on " \
        "the first step: the gates' gradient is the sublayer's output, which is not zero"
    with torch.no_grad():                                   # one step on those parameters alone
        for name, p in block.named_parameters():
            if name in alive:
                p -= 0.025 * p.grad.sign()
    assert not torch.allclose(block(x, c), x, atol=1e-4), \
        "after one step of the zero-initialised parameters alone, the block must differ from " \
        "the identity"


def test_a_trained_block_mixes_tokens_and_listens_to_the_condition():
    torch.manual_seed(0)
    block = dit.Block(WIDTH, HEADS)
    with torch.no_grad():
        for p in block.parameters():                              # as if trained: nothing zero
            p.copy_(0.2 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    x, c = inputs(4)
    out = block(x, c)
    other_token = x.clone()
    other_token[:, 0] += torch.randn(WIDTH, generator=torch.Generator().manual_seed(5))
    assert not torch.allclose(block(other_token, c)[:, 5], out[:, 5], atol=1e-5), \
        "attention: changing token 0 must change the output at token 5"
    other_c = c + torch.randn(WIDTH, generator=torch.Generator().manual_seed(6))
    assert not torch.allclose(block(x, other_c), out, atol=1e-5), \
        "the condition c must change the output"
    assert torch.allclose(block(x[:1], c[:1]), out[:1], atol=1e-5), \
        "each image in the batch is computed on its own"
