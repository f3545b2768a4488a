"""A4, dit.py: modulate, Block.__init__ and Block.forward (adaLN-Zero).

The checks are about behaviour: a new block is the identity, through its modulation's zero
start; every parameter that starts at zero still gets a gradient; once trained a little, the
block mixes tokens through attention, listens to the condition, gives each branch a shift, scale
and gate of its own, reads each branch's input through a layer norm, and passes the condition
its gradient. One check is about names, the three that inside.py (A9) takes units out by:
`attention`, `mlp` and `modulation`. Your answer also has to be what the other
generator files use: paste it into their blanked copies once these checks pass."""
import pytest
import torch
from torch import nn

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
    modulation = getattr(block, "modulation", None)
    assert isinstance(modulation, nn.Module), \
        "a new block is the identity through block.modulation, the layer that gives the shifts, " \
        "scales and gates: the block has none (see the check of the names)"
    own = {id(p) for p in modulation.parameters()}
    with torch.no_grad():                                  # every weight but the modulation's drawn
        for p in block.parameters():
            if id(p) not in own:
                p.copy_(0.2 * torch.randn(p.shape, generator=torch.Generator().manual_seed(16)))
    assert torch.allclose(block(x, c), x, atol=1e-6), \
        "adaLN-Zero: a new block is the identity because block.modulation starts with zero " \
        "gates, not because its branches start at zero: with every weight but the modulation's " \
        "drawn at random, a new block must still return its input (the branches start as any " \
        "layer does)"


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


def trained(block):
    """The block as if trained: every parameter set, nothing zero."""
    with torch.no_grad():
        for p in block.parameters():
            p.copy_(0.2 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    return block


def test_a_trained_block_mixes_tokens_and_listens_to_the_condition():
    torch.manual_seed(0)
    block = trained(dit.Block(WIDTH, HEADS))
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


def heard(block, x, c, silenced):
    """Which of block.modulation's output features change the block's output while the branch
    `silenced` (attention or mlp) returns zeros: (features,) bool, from their gradient."""
    kept = {}

    def keep(module, args, output):
        output.retain_grad()
        kept["output"] = output

    def zero(module, args, output):
        if isinstance(output, tuple):                           # nn.MultiheadAttention's
            return (torch.zeros_like(output[0]), *output[1:])
        return torch.zeros_like(output)

    hooks = [block.modulation.register_forward_hook(keep),
             getattr(block, silenced).register_forward_hook(zero)]
    weights = torch.randn(x.shape, generator=torch.Generator().manual_seed(15))
    (block(x, c) * weights).sum().backward()
    for hook in hooks:
        hook.remove()
    block.zero_grad()
    gradient = kept["output"].grad
    return gradient.reshape(-1, gradient.shape[-1]).abs().sum(0) > 0


def test_each_branch_has_its_own_shift_scale_and_gate():
    torch.manual_seed(0)
    block = trained(dit.Block(WIDTH, HEADS))
    x, c = inputs(14)
    mlp_alone = heard(block, x, c, "attention")             # the attention's output zeroed
    attention_alone = heard(block, x, c, "mlp")
    shared = int((mlp_alone & attention_alone).sum())
    assert mlp_alone.any() and attention_alone.any() and not shared, \
        "the attention and the MLP each get a shift, a scale and a gate of their own (six in " \
        f"all, from block.modulation): {shared} of its {len(mlp_alone)} outputs change the " \
        "block with either branch zeroed, so they serve both"


def test_both_branches_read_the_stream_through_a_layer_norm():
    torch.manual_seed(0)
    block = trained(dit.Block(WIDTH, HEADS))
    x, c = inputs(7)
    level = 3 * torch.randn(3, 10, 1, generator=torch.Generator().manual_seed(8))
    out, raised = block(x, c), block(x + level, c)        # each token's every feature moved alike
    assert torch.allclose(raised, out + level, atol=1e-4), \
        "each branch (attention, then MLP) reads a layer norm of x, modulated: adding the same " \
        "number to every feature of a token must add just that number to the block's output there"


def test_the_condition_gets_its_gradient_through_the_block():
    torch.manual_seed(0)
    block = trained(dit.Block(WIDTH, HEADS)).double()
    x, c = (z.double() for z in inputs(9))
    weights = torch.randn(x.shape, generator=torch.Generator().manual_seed(10), dtype=torch.float64)
    c.requires_grad_(True)
    (block(x, c) * weights).sum().backward()
    assert c.grad is not None and c.grad.abs().sum() > 0, \
        "no gradient reaches c through the block (is it detached?): the condition and time " \
        "embeddings must learn through every block, not through the final layer alone"
    with torch.no_grad():
        for seed in (11, 12):                                  # the gradient against a small move
            move = torch.randn(c.shape, generator=torch.Generator().manual_seed(seed),
                               dtype=torch.float64)
            step = 1e-5
            change = ((block(x, c + step * move) - block(x, c - step * move)) * weights).sum()
            assert torch.allclose(change / (2 * step), (c.grad * move).sum(), rtol=1e-4), \
                "the gradient c gets through the block must be the block's true gradient: part " \
                "of the way from c to the output is cut (a detach?)"


def test_the_block_names_its_units_as_inside_py_reads_them():
    block = dit.Block(WIDTH, HEADS)
    found = {name: type(getattr(block, name, None)).__name__
             for name in ("attention", "mlp", "modulation")}
    attention = getattr(block, "attention", None)
    named = isinstance(attention, nn.MultiheadAttention) and attention.num_heads == HEADS \
        and attention.batch_first \
        and all(isinstance(getattr(block, name, None), nn.Module) for name in ("mlp", "modulation"))
    assert named, \
        "inside.py (A9) reads a block's units by name: block.attention (nn.MultiheadAttention, " \
        f"batch_first, {HEADS} heads), block.mlp and block.modulation; found {found}"
    trained(block)
    x, c = inputs(13)
    out, calls = block(x, c), []
    hooks = [getattr(block, name).register_forward_hook(
        lambda m, a, output, name=name: calls.append(name)) for name in ("mlp", "modulation")]
    block(x, c)
    assert sorted(calls) == ["mlp", "modulation"], \
        f"block.mlp and block.modulation must each run once in a forward pass; ran: {calls}"
    for hook in hooks:
        hook.remove()
    hook = block.modulation.register_forward_hook(lambda m, a, output: torch.zeros_like(output))
    alone = block(x, c)
    hook.remove()
    assert torch.allclose(alone, x, atol=1e-6), \
        "the condition enters through block.modulation alone (its shifts, scales and gates): " \
        "with its output zeroed, the block must be the identity"
    with torch.no_grad():
        block.attention.out_proj.weight.zero_()
    other = x.clone()
    other[:, 0] += 1.0
    assert torch.allclose(block(other, c)[:, 5], block(x, c)[:, 5], atol=1e-5) \
        and not torch.allclose(block(x, c), out, atol=1e-5), \
        "tokens must mix through block.attention alone (its out_proj, which A9 ablates heads by)"
