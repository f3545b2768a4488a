"""maskgit_factored.py: a code's two parts, coverage mask and colour, as two categoricals."""
import math

import numpy as np
import torch
import torch.nn.functional as F

import data
import maskgit
from studies import maskgit_factored

MASKS, COLOURS = 16, 2


def condition(n):
    latents = data.sample_latents([[1, 1, 1]] * n, np.random.default_rng(0))
    return data.conditioning(latents, "continuous", train=False)


def factored():
    torch.manual_seed(0)
    model = maskgit_factored.FactoredMaskGIT((MASKS, COLOURS), width=32, depth=1, heads=4)
    torch.nn.init.normal_(model.head.weight, std=0.5)
    torch.nn.init.normal_(model.final_modulation.weight, std=0.5)
    return model


def test_the_joint_is_the_product_of_the_two_parts():
    model = factored()
    ids = torch.randint(MASKS * COLOURS, (2, 64))
    values, present = condition(2)
    raw = maskgit.MaskGIT.forward(model, ids, values, present)      # (B, T, M + C): the two heads
    p_mask, p_colour = raw[..., :MASKS].softmax(-1), raw[..., MASKS:].softmax(-1)
    p = model(ids, values, present).softmax(-1)
    for m, colour in ((0, 0), (3, 1), (15, 1)):                       # id = mask * colours + colour
        assert torch.allclose(p[..., m * COLOURS + colour], p_mask[..., m] * p_colour[..., colour],
                              atol=1e-6)
    # so the cross-entropy of a code is the two parts' cross-entropies added
    target = torch.tensor([7 * COLOURS + 1])
    joint = F.cross_entropy(model(ids, values, present)[0, :1], target)
    parts = -math.log(p_mask[0, 0, 7]) - math.log(p_colour[0, 0, 1])
    assert abs(joint.item() - parts) < 1e-5


def test_a_pair_never_trained_together_gets_mass_when_each_part_was_trained():
    """Train on (mask 3, red) and (mask 5, blue) only: the factored head gives (mask 3, blue)
    about p(mask 3) p(blue) = 1/4, the joint head about nothing (one condition for all: the
    network cannot tell the two apart)."""
    values, present = (v.repeat(8, 1) for v in condition(1))
    ids = torch.tensor([3 * COLOURS + 0, 5 * COLOURS + 1] * 4)[:, None].repeat(1, 64)
    masked = torch.full_like(ids, MASKS * COLOURS)                         # every position hidden
    reach = {}
    for name, parts in (("factored", (MASKS, COLOURS)), ("joint", None)):
        torch.manual_seed(0)
        model = (maskgit_factored.FactoredMaskGIT(parts, width=32, depth=1, heads=4) if parts
                 else maskgit.MaskGIT(MASKS * COLOURS, width=32, depth=1, heads=4))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(150):
            loss = F.cross_entropy(model(masked, values, present).flatten(0, 1), ids.flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            p = model(masked, values, present).softmax(-1)
            reach[name] = p[..., 3 * COLOURS + 1].mean().item()
    assert 0.2 < reach["factored"] < 0.3 and reach["joint"] < 0.01, reach


def test_the_script_trains_the_factored_head(tmp_path):
    from scripts import ONCE, main
    out = tmp_path / "run"
    main("maskgit_factored.py", *ONCE, "--out", out)
    state = torch.load(out / "ckpt.pt", weights_only=True)
    assert state["ema"]["head.weight"].shape[0] == 1024 + 2
    assert state["config"]["model"] == "maskgit_factored"
