"""A10, objects.py: neighbours (which patches hear an asked location), locality and
pixel_locality (how local the denoiser's answer is, to a location and to the pixels of x_t).

The checks use hand-made locations, and hand-made denoisers that use x_t and t as a real one
does and whose locality is known: one that draws a disc at each location and blurs x_t a little
(local), one whose every pixel is x_t's mean shifted by the first location's y (it mixes every
pixel), one that follows the location in x only (its move in y changes nothing). They remember
what they were called with, so the checks also see how the model is asked."""
import math

import numpy as np
import pytest
import torch

from studies import objects
from worlds import objects_world
import tokenizers

pytestmark = pytest.mark.a10
PIXELS = tokenizers.ContinuousTokenizer("pixels")
# locality adds the two moves' energies, then divides: a share per move is 0 / 0 (nan) where a
# move changes nothing, and averaged with a floor on 0 / 0 it halves the reading
PER_MOVE = "a share taken per move is 0 / 0 there; add the two moves' energies, then take the share"
AVERAGED = "are the two moves' shares averaged? add their energies, then take the share"


def patches(near):
    """The (x, y) patches a (64,) bool column marks."""
    return {(j % 8, j // 8) for j in torch.nonzero(near).flatten().tolist()}


def test_neighbours_are_the_patch_of_a_location_and_the_8_around_it():
    points = torch.tensor([[[9.0, 13.0], [0.5, 31.0], [11.0, 2.5], [14.5, 26.5], [20.0, 20.0]]])
    near = objects.neighbours(points, torch.tensor([[True, True, True, True, False]]))
    assert near.shape == (1, 64, 5) and near.dtype == torch.bool, \
        "one bool per (image, token, location)"
    assert patches(near[0, :, 0]) == {(x, y) for x in (1, 2, 3) for y in (2, 3, 4)}, \
        "(9, 13) lies in patch (2, 3): it and the 8 patches around it hear it"
    assert patches(near[0, :, 1]) == {(0, 6), (1, 6), (0, 7), (1, 7)}, \
        "at a corner, the 4 patches there"
    for k, (x, y), cell in ((2, (11.0, 2.5), (2, 0)), (3, (14.5, 26.5), (3, 6))):
        want = {(cell[0] + i, cell[1] + j) for i in (-1, 0, 1) for j in (-1, 0, 1)
                if 0 <= cell[0] + i < 8 and 0 <= cell[1] + j < 8}
        got = patches(near[0, :, k])
        centre = (f"; it is heard around patch {min(got)[0] + 1, min(got)[1] + 1}"
                  if len(got) == 9 and got != want else "")
        assert got == want, \
            f"({x}, {y}) lies in patch {cell} (x / 4 and y / 4, rounded down): it and the " \
            f"patches around it hear it{centre}"
    assert not near[0, :, 4].any(), "an absent location (present False) is heard by no patch"


class Denoiser(torch.nn.Module):
    """x0_hat = answer(x_t, t, points, present); every call is remembered."""

    def __init__(self, answer):
        super().__init__()
        self.answer, self.calls, self.p = answer, [], torch.nn.Parameter(torch.zeros(()))

    def forward(self, x_t, t, points, present):
        self.calls.append({"x_t": x_t.detach().clone(), "t": t.clone(), "points": points.clone(),
                           "present": present.clone()})
        return self.answer(x_t, t, points, present)


def discs(points, present):
    images = objects_world.render_objects([p[m].detach().numpy() for p, m in zip(points, present)])
    return PIXELS.encode(images).float()


def local(x_t, t, points, present):
    """Discs at the locations, and x_t averaged over each pixel's 3x3: local in both."""
    image = tokenizers.unpatchify(x_t, 4).permute(0, 3, 1, 2)
    blurred = torch.nn.functional.avg_pool2d(image, 3, stride=1, padding=1, count_include_pad=False)
    t = t[:, None, None]
    blurred = tokenizers.patchify(blurred.permute(0, 2, 3, 1), 4)
    return (1 - t) * discs(points, present) + t * blurred


def mixing(x_t, t, points, present):
    """Every value: x_t's mean over the canvas, plus t times the first location's y / 10."""
    t = t[:, None, None]
    return (1 - t) * x_t.mean((1, 2), keepdim=True) + t * points[:, :1, 1:2] / 10 + 0 * x_t


def in_x_only(x_t, t, points, present):
    """local, each location's y put at its cell's row: a move in y changes nothing."""
    rows = torch.as_tensor(objects_world.GRID, dtype=points.dtype)
    snapped = points.clone()
    snapped[..., 1] = rows[(points[..., 1:] - rows).abs().argmin(-1)]
    return local(x_t, t, snapped, present)


def at_the_told_one(x_t, t, points, present):
    """Every pixel is x_t at the first (told) location's pixel: it reads one far pixel."""
    image = tokenizers.unpatchify(x_t, 4)
    column, row = points[:, 0].long().unbind(-1)
    there = image[torch.arange(len(x_t)), row, column]                      # (B, 3)
    spread = tokenizers.patchify(there[:, None, None].expand(-1, 32, 32, -1), 4)
    return spread * (1 - t[:, None, None])


def shares(centres, radius=6.0):
    """The share of the canvas within radius px of each centre."""
    grid = np.arange(32) + 0.5
    return np.array([(((grid[None] - x) ** 2 + (grid[:, None] - y) ** 2) <= radius ** 2).mean()
                     for x, y in centres])


def where(function, positions, k):
    """Which location a failed reading was about (the k-th of the image where it lies furthest
    from the diagonal x = y), and whether x and y look swapped: the reading again with each
    image's k-th location put on the diagonal, where a swap changes nothing (local denoiser)."""
    i = max(range(len(positions)), key=lambda i: abs(positions[i][k][0] - positions[i][k][1]))
    x, y = positions[i][k]
    said = (f" (image {i}'s {'first' if k == 0 else 'second'} object: x = {x:.1f}, y = {y:.1f} px, "
            f"the pixel in row {int(y)}, column {int(x)})")
    moved = [p.copy() for p in positions]
    for p in moved:
        p[k, 1] = p[k, 0]
    x_0 = PIXELS.encode(objects_world.render_objects(moved)).float()
    try:
        again = float(function(Denoiser(local), x_0, moved, 0.5, g()))
    except Exception:                                       # no second reading: no word on it
        again = math.nan
    if 0.99 < again <= 1.0001:
        said += "; it reads 1 where x = y: are x and y swapped? x is the column, y the row"
    return said


@pytest.fixture(scope="module")
def threes():
    positions = objects_world.sample_positions([3] * 8, np.random.default_rng(0))
    return PIXELS.encode(objects_world.render_objects(positions)).float(), positions


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def test_locality_is_one_for_a_local_denoiser_and_the_discs_share_for_one_that_mixes(threes):
    x_0, positions = threes
    share = float(objects.locality(Denoiser(local), x_0, positions, 0.5, g()))
    assert 0.99 < share <= 1.0001, \
        f"every pixel a moved disc changes lies within 6 px of it: expected 1, got {share:.3f}" \
        f"{where(objects.locality, positions, 0)}"
    share = float(objects.locality(Denoiser(mixing), x_0, positions, 0.5, g()))
    assert not math.isnan(share), \
        f"got nan: this denoiser reads the first location's y alone, so its move in x changes " \
        f"nothing; {PER_MOVE}"
    expected = shares([p[0] for p in positions]).mean()
    why = (f"half of it: {AVERAGED}" if share == pytest.approx(expected / 2, rel=1e-2)
           else "0: is the model told t, not 0, and is the location moved in y as well as in x?")
    assert share == pytest.approx(expected, rel=1e-3), \
        (f"a move in y of the first location changes every pixel alike (by t x nudge / 10): the "
         f"6 px disc's share of the canvas, {expected:.3f}, expected; got {share:.3f} ({why})")


def test_locality_noises_x_0_once_at_t_and_moves_the_first_location_in_x_then_in_y(threes):
    x_0, positions = threes
    model = Denoiser(local)
    objects.locality(model, x_0, positions, 0.3, g(), nudge=0.5)
    assert len(model.calls) == 3, \
        f"three calls (as asked, moved in x, moved in y), got {len(model.calls)}"
    base = model.calls[0]
    for call in model.calls:
        assert torch.equal(call["t"], torch.full((8,), 0.3)), \
            "the model must be told the time t (B,)"
        assert torch.equal(call["x_t"], base["x_t"]), "the same x_t for the three calls, drawn once"
    eps = (base["x_t"] - 0.7 * x_0) / 0.3
    assert abs(float(eps.mean())) < 0.05 and abs(float(eps.std()) - 1) < 0.05, \
        "x_t = (1 - t) x_0 + t eps with eps ~ N(0, 1): noise x_0 to time t (dit.py's noisy)"
    asked = objects.padded(positions)
    assert torch.equal(base["points"], asked[0]) and torch.equal(base["present"], asked[1]), \
        "call 1: the locations as asked (objects.padded(positions))"
    for call, axis, name in ((model.calls[1], 0, "x"), (model.calls[2], 1, "y")):
        moved = asked[0].clone()
        moved[:, 0, axis] += 0.5
        assert torch.equal(call["points"], moved), \
            f"call {axis + 2}: each image's first location moved by nudge in {name}, the rest not"
    again = Denoiser(local)
    objects.locality(again, x_0, positions, 0.3, g())
    assert torch.equal(again.calls[0]["x_t"], base["x_t"]), "draw eps with the generator given"


def test_locality_in_x_then_in_y_adds_the_two_changes_before_dividing(threes):
    x_0, positions = threes
    share = float(objects.locality(Denoiser(in_x_only), x_0, positions, 0.5, g()))
    assert not math.isnan(share), \
        f"got nan: this denoiser's move in y changes nothing (0 everywhere); {PER_MOVE}"
    if not 0.99 < share <= 1.0001:
        why = (f" ({AVERAGED})" if abs(share - 0.5) < 0.01
               else where(objects.locality, positions, 0))
        raise AssertionError("its move in x changes only pixels near the location: expected 1, "
                             f"got {share:.3f}{why}")


def test_pixel_locality_is_one_for_a_local_denoiser_and_the_discs_share_for_one_that_mixes(threes):
    x_0, positions = threes
    share = float(objects.pixel_locality(Denoiser(local), x_0, positions, 0.5, g()))
    assert 0.99 < share <= 1.0001, \
        f"a 3x3 blur of x_t reads pixels within 1.5 px of the second object's: expected 1, got " \
        f"{share:.3f}{where(objects.pixel_locality, positions, 1)}"
    share = float(objects.pixel_locality(Denoiser(mixing), x_0, positions, 0.5, g()))
    second = shares([p[1] for p in positions])
    assert second.min() - 1e-4 <= share <= second.max() + 1e-4, \
        (f"a pixel that reads every pixel of x_t alike: the 6 px disc's share of the canvas "
         f"around the second object, {second.min():.3f} to {second.max():.3f}, expected; "
         f"got {share:.3f}")
    share = float(objects.pixel_locality(Denoiser(at_the_told_one), x_0, positions, 0.5, g(), 3.0))
    assert share < 1e-6, \
        (f"a denoiser that reads x_t at the told (first) object only: nothing within 3 px of the "
         f"second object, expected 0; got {share:.3f} (take the gradient at the second's pixel)")
    blind = Denoiser(lambda x_t, t, points, present: discs(points, present) + 0 * x_t)
    share = float(objects.pixel_locality(blind, x_0, positions, 0.5, g()))
    assert share == 1.0, \
        f"a prediction that reads no pixel of x_t is local: expected 1, got {share}"


def test_pixel_locality_tells_the_first_location_alone_at_t(threes):
    x_0, positions = threes
    model = Denoiser(local)
    objects.pixel_locality(model, x_0, positions, 0.6, g())
    assert len(model.calls) == 1, f"one call, got {len(model.calls)}"
    call = model.calls[0]
    assert torch.equal(call["t"], torch.full((8,), 0.6)), "the model must be told the time t (B,)"
    eps = (call["x_t"] - 0.4 * x_0) / 0.6
    assert abs(float(eps.mean())) < 0.05 and abs(float(eps.std()) - 1) < 0.05, \
        "x_t = (1 - t) x_0 + t eps with eps ~ N(0, 1): noise x_0 to time t"
    first = objects.padded([p[:1] for p in positions])[0]
    assert call["present"].shape == (8, 1) and torch.equal(call["points"], first), \
        "the model is told each image's first location alone (points (B, 1, 2)), the rest untold"
