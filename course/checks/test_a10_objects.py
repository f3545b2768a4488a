"""A10, objects.py: neighbours (which patches hear an asked location) and locality (how local
the denoiser's answer to a location is).

The checks use hand-made locations, and hand-made denoisers whose locality is known: one that
draws a disc at each location (all of its change sits at the location) and one that moves the
whole canvas with the first location (its change is spread evenly)."""
import numpy as np
import pytest
import torch

import data
import objects

pytestmark = pytest.mark.a10


def patches(near):
    """The (x, y) patches a (64,) bool column marks."""
    return {(j % 8, j // 8) for j in torch.nonzero(near).flatten().tolist()}


def test_neighbours_are_the_patch_of_a_location_and_the_8_around_it():
    points = torch.tensor([[[9.0, 13.0], [0.5, 31.0], [20.0, 20.0]]])
    near = objects.neighbours(points, torch.tensor([[True, True, False]]))
    assert near.shape == (1, 64, 3) and near.dtype == torch.bool, "one bool per (image, token, location)"
    assert patches(near[0, :, 0]) == {(x, y) for x in (1, 2, 3) for y in (2, 3, 4)}, \
        "(9, 13) lies in patch (2, 3): it and the 8 patches around it hear it"
    assert patches(near[0, :, 1]) == {(0, 6), (1, 6), (0, 7), (1, 7)}, "at a corner, the 4 patches there"
    assert not near[0, :, 2].any(), "an absent location (present False) is heard by no patch"


class Discs(torch.nn.Module):
    def __init__(self, spread=False):
        super().__init__()
        self.spread, self.p = spread, torch.nn.Parameter(torch.zeros(1))

    def forward(self, x_t, t, points, present):
        images = data.render_objects([p[m].numpy() for p, m in zip(points, present)])
        x = data.ContinuousTokenizer("pixels").encode(images).float()
        return 0 * x + points[:, :1, :1] / 10 if self.spread else x


@pytest.fixture(scope="module")
def threes():
    positions = data.sample_positions([3] * 8, np.random.default_rng(0))
    return data.ContinuousTokenizer("pixels").encode(data.render_objects(positions)).float(), positions


def test_locality_is_one_for_a_denoiser_that_answers_at_the_location(threes):
    x_0, positions = threes
    share = objects.locality(Discs(), x_0, positions, 0.5, torch.Generator().manual_seed(0))
    assert 0.99 < share <= 1.0001, f"every pixel a moved disc changes lies within 6 px of it: expected 1, got {share:.3f}"


def test_locality_is_the_discs_share_for_a_denoiser_that_answers_everywhere(threes):
    x_0, positions = threes
    share = objects.locality(Discs(spread=True), x_0, positions, 0.5, torch.Generator().manual_seed(0))
    assert 0.05 < share <= np.pi * 36 / 1024, \
        f"a change spread evenly over the canvas: the 6 px disc's share of it (0.11, less at an edge), got {share:.3f}"
