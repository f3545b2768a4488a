"""objects.py and its world: the renderer, the object counter, the local conditioning map, the
two locality readings on stand-in denoisers whose answer is known, the device of every tensor the
model sees, the sampler step by step, the attention masks per image and head, the patch arm's
reach (measured by gradients, and by the readings after training), the script's command line,
and what compares with the kept runs (results/objects/runs)."""
import json
import math

import numpy as np
import pytest
import torch

import data
from studies import objects
from worlds import objects_world
import runs
import tokenizers
import scripts


def generator(seed=0):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------------- the world
def test_the_renderer_puts_n_separate_discs_where_asked():
    rng = np.random.default_rng(0)
    for n in (0, 1, 3, 8, 25):
        positions = objects_world.sample_positions([n] * 20, rng)
        for image, asked in zip(objects_world.render_objects(positions), positions):
            found = objects_world.find_objects(image)
            assert len(found) == n                                          # never two touching
            centres = np.array([c for c, _ in found]).reshape(-1, 2)
            assert all(np.linalg.norm(centres - p, axis=1).min() < 0.3 for p in asked)
    with pytest.raises(ValueError, match="cannot place 26 objects"):
        objects_world.sample_positions([26], rng)


def canvas(*discs):
    """A hand-made image: a disc of the given radius at each (x, y, radius)."""
    image = np.zeros((data.IMAGE_SIZE, data.IMAGE_SIZE, 3), np.float32)
    grid = np.arange(data.IMAGE_SIZE) + 0.5
    for x, y, r in discs:
        d = np.sqrt((grid[None, :] - x) ** 2 + (grid[:, None] - y) ** 2) - r
        image = np.maximum(image, np.clip(0.5 - d, 0, 1)[..., None] * objects_world.OBJECT_COLOR)
    return image


def test_the_counter_on_hand_made_canvases():
    asked = [(4.0, 4.0), (16.0, 10.0), (28.0, 22.0)]
    right = canvas(*[(x, y, 1.8) for x, y in asked])
    assert objects_world.objects_right(right, asked)
    for n in range(11):                                         # 0 to 10, each where asked
        cells = objects_world.CELLS[:n]
        assert objects_world.objects_right(canvas(*[(x, y, 1.8) for x, y in cells]), cells), n
    wrong = {"one missing": canvas(*[(x, y, 1.8) for x, y in asked[:2]]),
             "one extra": canvas(*[(x, y, 1.8) for x, y in asked], (10, 28, 1.8)),
             "two touching": canvas(*[(x, y, 1.8) for x, y in asked[1:]], (4, 4, 1.8),
                                    (7.5, 4, 1.8)),
             "a fragment": canvas(*[(x, y, 1.8) for x, y in asked[1:]], (4, 4, 0.9)),
             "3 px off": canvas(*[(x, y, 1.8) for x, y in asked[1:]], (7.0, 4.0, 1.8))}
    for name, image in wrong.items():
        assert not objects_world.objects_right(image, asked), name
    speck = right.copy()
    speck[20, 5] = objects_world.OBJECT_COLOR                  # one stray pixel is no object
    assert objects_world.objects_right(speck, asked)


def blob(*pixels):
    """A hand-made image: the object's colour on exactly these (row, column) pixels."""
    image = np.zeros((data.IMAGE_SIZE, data.IMAGE_SIZE, 3), np.float32)
    for row, column in pixels:
        image[row, column] = objects_world.OBJECT_COLOR
    return image


def block(top, left, rows, columns):
    return [(top + i, left + j) for i in range(rows) for j in range(columns)]


def test_objects_world_counter_holds_each_tolerance_at_its_edge():
    """Each tolerance of the counter, in its own units, just inside and just outside: a disc within
    2 px of its asked location in the plane (1.9 px off is right, 2.1 px and 1.5 px in x and in y
    are not, 1.35 px in each is; 2.0 px exactly is within), of 5 to 20 pixels (4 and 21 are not),
    of pixels brighter than 0.3 in their largest channel, and parts of three pixels or more."""
    disc = canvas((16.0, 10.0, 1.8))                   # centred on a pixel corner: centroid exact
    for (dx, dy), right in {(0.0, 1.9): True, (0.0, 2.0): True, (0.0, 2.1): False,
                            (1.9, 0.0): True, (-2.1, 0.0): False, (1.35, 1.35): True,
                            (1.5, 1.5): False, (-1.35, 1.35): True}.items():
        assert objects_world.objects_right(disc, [(16.0 + dx, 10.0 + dy)]) == right, (dx, dy)
    plus = [(9, 15), (8, 15), (10, 15), (9, 14), (9, 16)]          # 5 px, centroid (15.5, 9.5)
    for pixels, right in ((plus, True), (plus[:4], False), (block(8, 14, 4, 5), True),
                          (block(8, 13, 3, 7), False)):                 # 5, 4, 20, 21 pixels
        xs = np.mean([c for _, c in pixels]) + 0.5
        ys = np.mean([r for r, _ in pixels]) + 0.5
        assert objects_world.objects_right(blob(*pixels), [(xs, ys)]) == right, len(pixels)
    for brightness, found in ((0.31, 1), (0.29, 0)):                # the largest channel's
        image = blob(*block(8, 14, 3, 3)) / objects_world.OBJECT_COLOR.max() * brightness
        assert len(objects_world.find_objects(image)) == found, brightness
    parts = blob((2, 2), (2, 3), (20, 20), (20, 21), (21, 20))           # 2 px and 3 px
    assert [area for _, area in objects_world.find_objects(parts)] == [3]


def test_objects_readings_find_an_asked_location_within_2_px_and_no_further():
    """objects.readings' found and extra, at their edge: a disc 1.9 px (and 2.0 px) from the asked
    location found it, one 2.1 px off did not and is an extra disc."""
    disc = canvas((16.0, 10.0, 1.8))
    asked = [np.array([[16.0, 11.9]]), np.array([[16.0, 12.0]]), np.array([[16.0, 12.1]]),
             np.array([[14.5, 11.5]])]                                     # 2.12 px off
    _, found, extra = objects.readings(np.stack([disc] * 4), asked)
    assert found.tolist() == [1.0, 1.0, 0.0, 0.0] and extra.tolist() == [0, 0, 1, 1]


# ----------------------------------------------------------------------- the method
def test_local_conditioning_reaches_the_patches_in_and_next_to_a_location():
    points, present = torch.tensor([[[9.0, 13.0], [30.0, 2.0]]]), torch.tensor([[True, False]])
    near = objects.neighbours(points, present)[0]                           # (64, 2)
    cells = {(j % 8, j // 8) for j in torch.nonzero(near[:, 0]).flatten().tolist()}
    assert cells == {(x, y) for x in (1, 2, 3) for y in (2, 3, 4)}   # patch (2, 3) and the 8 around
    assert not near[:, 1].any()                                 # an absent location reaches none


def test_objects_fourier_features_are_u_then_sin_and_cos_at_octaves_of_pi():
    u = torch.tensor([[0.3, -0.7]])
    features = objects.fourier(u, bands=3)[0]                               # (2 + 4 * 3,)
    angles = [math.pi * 2 ** k * v for v in (0.3, -0.7) for k in range(3)]
    expected = [0.3, -0.7] + [math.sin(a) for a in angles] + [math.cos(a) for a in angles]
    assert torch.allclose(features, torch.tensor(expected), atol=1e-5)


def test_objects_the_local_arm_lets_a_patch_attend_to_the_3x3_patches_around_it_alone():
    model = objects.ObjectsDiT("local", width=16, depth=1, heads=2)
    for j, (x, y) in ((8 * 3 + 2, (2, 3)), (0, (0, 0))):                    # token = 8 y + x
        seen = {(i % 8, i // 8) for i in torch.nonzero(~model.far[j]).flatten().tolist()}
        assert seen == {(a, b) for a in range(x - 1, x + 2) for b in range(y - 1, y + 2)
                        if 0 <= a < 8 and 0 <= b < 8}, (x, y)


def test_objects_padded_keeps_each_location_in_order_and_marks_the_absent():
    points, present = objects.padded([np.array([[1.0, 2.0]]), np.zeros((0, 2)),
                                      np.array([[3.0, 4.0], [5.0, 6.0]])])
    assert points.shape == (3, 2, 2)
    assert torch.equal(present, torch.tensor([[True, False], [False, False], [True, True]]))
    assert torch.equal(points[0, 0], torch.tensor([1.0, 2.0]))                     # (x, y)
    assert torch.equal(points[2], torch.tensor([[3.0, 4.0], [5.0, 6.0]]))
    assert torch.equal(points[~present], torch.zeros(3, 2))


def test_objects_near_pixels_are_the_pixel_centres_within_the_radius_of_x_y():
    centre, radius = (5.5, 20.5), 2.5                                       # (x, y) in pixels
    near = objects.near_pixels(torch.tensor([centre]), radius)[0]           # (H, W): [row, column]
    expected = torch.tensor([[(column + 0.5 - centre[0]) ** 2 + (row + 0.5 - centre[1]) ** 2
                              <= radius ** 2 for column in range(32)] for row in range(32)])
    assert torch.equal(near, expected) and near[20, 5] and not near[5, 20]
    edge = objects.near_pixels(torch.tensor([centre]), 2.0)[0]    # 2 px in x or in y: on the edge
    assert edge[20, 7] and edge[22, 5] and edge[18, 5] and not edge[22, 6] and edge.sum() == 13


def test_objects_readings_count_found_asked_locations_and_extra_discs_apart():
    drawn = np.array([[8.0, 8.0], [24.0, 20.0]], np.float32)               # two discs
    images = objects_world.render_objects([drawn] * 3)
    asked = [drawn, drawn[:1], np.concatenate([drawn, [[16.0, 28.0]]])]   # both; one; one more
    right, found, extra = objects.readings(images, asked)
    assert right.tolist() == [True, False, False]
    assert np.allclose(found, [1.0, 1.0, 2 / 3]) and extra.tolist() == [0, 1, 0]


def test_objects_evaluate_aggregates_each_reading_by_the_number_asked_trained_and_beyond(tmp_path):
    """objects.evaluate's aggregates against their parts: per-sample readings known by their
    number asked n and their place j among the two samples of that n (readings, the draw and the
    locality readings stood in), averaged here by hand: by n, over 1-3 (trained: 0 is neither) and
    over 4-10 (beyond: 3 is the last trained, 4 the first beyond)."""
    _, args = objects.parse(["--samples-per-comp", "2", "--width", "16", "--depth", "1",
                             "--heads", "2", "--sample-steps", "1", "--out", str(tmp_path)])
    config = dict(vars(args), model=objects.NAME)
    runs.start_clock(config)
    model, tokenizer = objects.build(config)
    right = {(n, j): (n + j) % 3 == 0 for n in objects.ASKED for j in (0, 1)}
    found = {(n, j): (n + 1 + 2 * j) / 40 for n in objects.ASKED for j in (0, 1)}
    extra = {(n, j): 2 * n + 3 * j for n in objects.ASKED for j in (0, 1)}

    def readings(images, positions):
        places = [(len(p), [len(q) for q in positions[:i]].count(len(p)))
                  for i, p in enumerate(positions)]                          # (n, j) of each
        return tuple(np.array([table[place] for place in places])
                     for table in (right, found, extra))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(objects, "readings", readings)
        patch.setattr(objects, "draw", lambda model, tokenizer, config, values, present, g:
                      torch.zeros(len(values), 32, 32, 3))
        for name in ("locality", "pixel_locality"):
            patch.setattr(objects, name, lambda *args, **kwargs: torch.tensor(0.5))
        patch.setattr(objects, "save_grid", lambda *args: None)
        metrics = objects.draw_and_read(model, tokenizer, config, 1, 0.0)

    def mean(table, numbers):
        return sum(table[n, j] for n in numbers for j in (0, 1)) / (2 * len(numbers))
    for key, table in (("exact", right), ("found", found), ("extra", extra)):
        assert metrics[key] == {str(n): pytest.approx(mean(table, [n])) for n in objects.ASKED}
    assert metrics["trained"] == pytest.approx(mean(right, [1, 2, 3]))
    assert metrics["beyond"] == pytest.approx(mean(right, range(4, 11)))
    assert metrics["found_trained"] == pytest.approx(mean(found, [1, 2, 3]))
    assert metrics["found_beyond"] == pytest.approx(mean(found, range(4, 11)))


def test_objects_headline_and_report_print_exact_then_found(capsys):
    metrics = {"trained": 0.12, "found_trained": 0.34, "beyond": 0.56, "found_beyond": 0.78,
               "exact": {str(n): n / 20 for n in objects.ASKED},
               "found": {str(n): 1 - n / 20 for n in objects.ASKED},
               "extra": {str(n): n / 4 for n in objects.ASKED},
               **{key: {"0.2": 0.9} for key in ("locality", "pixel_locality",
                                                 "locality_within_reach")}}
    assert objects.headline(metrics).startswith(
        f"exact (found): trained counts 1-3 12.0 (34.0) | beyond, {objects.BEYOND} 56.0 (78.0)")
    objects.report(metrics)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["asked", "exact", "found", "extra"]
    assert lines[1 + 4].split() == ["4", "20.0%", "80.0%", "1.00"]             # 4 asked


@pytest.mark.parametrize("trained", [False, True])
def test_moving_one_location_moves_only_its_neighbourhood_of_the_local_condition(trained):
    """At initialisation and after a training step, the condition each token receives changes only
    in the 3x3 patches around the moved location."""
    torch.manual_seed(0)
    model = objects.ObjectsDiT("local", width=32, depth=2, heads=4)
    if trained:
        positions = objects_world.sample_positions([3] * 8, np.random.default_rng(0))
        images = objects_world.render_objects(positions)
        x_0 = tokenizers.ContinuousTokenizer("pixels").encode(images).float()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        loss = objects.flow_loss(model, x_0, *objects.padded(positions), generator())
        loss.backward()
        optimizer.step()
    points = torch.tensor([[[9.0, 13.0], [26.0, 26.0]]])
    present = torch.ones(1, 2, dtype=torch.bool)
    moved = points.clone()
    moved[0, 0] += torch.tensor([1.0, 0.5])                                 # still in patch (2, 3)
    change = model.local_condition(points, present) - model.local_condition(moved, present)
    change = change.abs().sum(-1)[0]
    touched = {(j % 8, j // 8) for j in torch.nonzero(change > 0).flatten().tolist()}
    assert touched == {(x, y) for x in (1, 2, 3) for y in (2, 3, 4)}


# ------------------------------------------------------------ stand-in denoisers, known answers
PIXELS = tokenizers.ContinuousTokenizer("pixels")


class Denoiser(torch.nn.Module):
    """A hand-made denoiser: x0_hat = answer(x_t, t, points, present); it records every call."""

    def __init__(self, answer):
        super().__init__()
        self.answer, self.calls, self.p = answer, [], torch.nn.Parameter(torch.zeros(()))

    def forward(self, x_t, t, points, present):
        self.calls.append({"x_t": x_t.detach().clone(), "t": t.clone(), "points": points.clone(),
                           "present": present.clone()})
        return self.answer(x_t, t, points, present)


def discs(points, present):
    """The tokens of a disc at each present location, rendered as data.py renders."""
    images = objects_world.render_objects([p[m].detach().numpy() for p, m in zip(points, present)])
    return PIXELS.encode(images).float()


def blur(x_t):
    """Each pixel the mean of the 3x3 pixels around it: x_t read within 1.5 px."""
    image = tokenizers.unpatchify(x_t, 4).permute(0, 3, 1, 2)
    smooth = torch.nn.functional.avg_pool2d(image, 3, stride=1, padding=1, count_include_pad=False)
    return tokenizers.patchify(smooth.permute(0, 2, 3, 1), 4)


def local(x_t, t, points, present):
    """Local by construction: discs where the locations are, and x_t blurred, weighed by t."""
    t = t[:, None, None]
    return (1 - t) * discs(points, present) + t * blur(x_t)


def mixing(x_t, t, points, present):
    """Mixes every token: each value is x_t's mean over the canvas, shifted by t times the first
    location's y (so a move in y changes every pixel alike, and a move in x none)."""
    t = t[:, None, None]
    return (1 - t) * x_t.mean((1, 2), keepdim=True) + t * points[:, :1, 1:2] / 10 + 0 * x_t


def in_x_only(x_t, t, points, present):
    """local's discs with each y put at its cell's row: the location's move in y changes nothing."""
    rows = torch.as_tensor(objects_world.GRID, dtype=points.dtype)
    snapped = points.clone()
    snapped[..., 1] = rows[(points[..., 1:] - rows).abs().argmin(-1)]
    return local(x_t, t, snapped, present)


def at_the_told_one(x_t, t, points, present):
    """Every pixel is x_t at the first (told) location's pixel: it reads one pixel, far away."""
    image = tokenizers.unpatchify(x_t, 4)
    column, row = points[:, 0].long().unbind(-1)
    there = image[torch.arange(len(x_t)), row, column]                      # (B, 3)
    spread = tokenizers.patchify(there[:, None, None].expand(-1, 32, 32, -1), 4)
    return spread * (1 - t[:, None, None])


def disc_shares(centres, radius=6.0):
    """The share of the canvas's pixels within radius px of each centre (numpy, by hand)."""
    grid = np.arange(data.IMAGE_SIZE) + 0.5
    return np.array([(((grid[None] - x) ** 2 + (grid[:, None] - y) ** 2) <= radius ** 2).mean()
                     for x, y in centres])


@pytest.fixture(scope="module")
def threes():
    positions = objects_world.sample_positions([3] * 8, np.random.default_rng(0))
    return PIXELS.encode(objects_world.render_objects(positions)).float(), positions


@pytest.mark.parametrize("t", [0.2, 0.5, 0.8])
def test_objects_the_locality_readings_on_denoisers_whose_answer_is_known(t, threes):
    x_0, positions = threes
    assert objects.locality(Denoiser(local), x_0, positions, t, generator()) > 0.999
    assert objects.pixel_locality(Denoiser(local), x_0, positions, t, generator()) > 0.999
    # one that mixes every token: the disc's share of the canvas (less at an edge)
    first, second = disc_shares([p[0] for p in positions]), disc_shares([p[1] for p in positions])
    spread = float(objects.locality(Denoiser(mixing), x_0, positions, t, generator()))
    assert spread == pytest.approx(first.mean(), rel=1e-4)
    sight = float(objects.pixel_locality(Denoiser(mixing), x_0, positions, t, generator()))
    assert second.min() - 1e-6 <= sight <= second.max() + 1e-6       # each image's share, weighed
    # the gradient is read at the second object: one that reads x_t at the first alone reads 0
    told = objects.pixel_locality(Denoiser(at_the_told_one), x_0, positions, t, generator(), 3.0)
    assert float(told) < 1e-6
    # a move in y that changes nothing: the two moves' energies add up, no 0 / 0
    assert float(objects.locality(Denoiser(in_x_only), x_0, positions, t, generator())) > 0.999
    # a prediction that reads no pixel of x_t, or no location, reads local (no 0 / 0)
    blind = Denoiser(lambda x_t, t, points, present: discs(points, present) + 0 * x_t)
    assert float(objects.pixel_locality(blind, x_0, positions, t, generator())) == 1.0
    unmoved = Denoiser(lambda x_t, t, points, present: blur(x_t))
    assert float(objects.locality(unmoved, x_0, positions, t, generator())) == 1.0
    with pytest.raises(ValueError, match=r"2 objects or more in each image, got \{1, 3\}"):
        objects.pixel_locality(blind, x_0, [p[:1] for p in positions[:1]] + positions[1:], t,
                               generator())


def standard_normal(noise):
    return abs(float(noise.mean())) < 0.05 and abs(float(noise.std()) - 1) < 0.05


def test_objects_locality_noises_once_at_t_tells_the_model_t_and_moves_in_x_then_in_y(threes):
    x_0, positions = threes
    model = Denoiser(local)
    objects.locality(model, x_0, positions, 0.3, generator())              # by its defaults
    base, in_x, in_y = model.calls
    for call in model.calls:
        assert torch.equal(call["t"], torch.full((8,), 0.3)), "the model is told the time t"
        assert torch.equal(call["x_t"], base["x_t"]), "one x_t for the three calls"
        assert torch.equal(call["present"], torch.ones(8, 3, dtype=torch.bool))
    assert standard_normal((base["x_t"] - 0.7 * x_0) / 0.3), "x_t = 0.7 x_0 + 0.3 eps, eps N(0, 1)"
    points, _ = objects.padded(positions)
    assert torch.equal(base["points"], points)
    for call, axis in ((in_x, 0), (in_y, 1)):
        moved = points.clone()
        moved[:, 0, axis] += 0.5                                  # the first location alone, 0.5 px
        assert torch.equal(call["points"], moved)
    again, other = Denoiser(local), Denoiser(local)               # the noise is the generator's
    objects.locality(again, x_0, positions, 0.3, generator())
    objects.locality(other, x_0, positions, 0.3, generator(1))
    assert torch.equal(again.calls[0]["x_t"], base["x_t"])
    assert not torch.equal(other.calls[0]["x_t"], base["x_t"])


def test_objects_pixel_locality_tells_the_first_location_alone_at_t(threes):
    x_0, positions = threes
    model = Denoiser(local)
    objects.pixel_locality(model, x_0, positions, 0.6, generator())
    (call,) = model.calls
    assert torch.equal(call["t"], torch.full((8,), 0.6))
    assert standard_normal((call["x_t"] - 0.4 * x_0) / 0.6)
    assert torch.equal(call["points"], objects.padded([p[:1] for p in positions])[0])
    assert call["present"].shape == (8, 1) and call["present"].all()


def perturbed(model, std=0.2):
    torch.manual_seed(1)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=std)
    return model


def test_objects_every_tensor_the_model_sees_is_made_on_its_device(threes):
    """The model on the meta device: a tensor made on the CPU and handed to it raises, as on a GPU.
    The readings, the sampler and the condition make theirs on the model's device. (A draw on
    meta ignores its generator, which the meta device lacks: the CPU's stands in.)"""
    x_0, positions = threes
    for locality in ("global", "local", "patch"):
        model = objects.ObjectsDiT(locality, width=32, depth=1, heads=4).to("meta")
        assert objects.locality(model, x_0, positions, 0.5, generator()).device.type == "meta"
        assert objects.pixel_locality(model, x_0, positions, 0.5, generator()).device.type == "meta"
        values, present = objects.padded(positions, "meta")
        assert objects.sample(model, values, present, 48, 2, generator()).device.type == "meta"


def test_objects_sampler_calls_the_network_at_each_euler_time_and_steps_by_the_velocity():
    """draw() through dit.py's sampler, step by step: noise from the run's generator at t = 1, the
    network called at t = 1, 3/4, 1/2, 1/4 with the asked locations, x_t' = x_t + (t' - t) v_hat
    with v_hat = (x_t - x0_hat) / t, down to t = 0; the last x decoded to [0, 1]."""
    def answer(x_t, t, points, present):
        return 0.5 * x_t + 0.2 * t[:, None, None] - 0.3
    model = Denoiser(answer)
    values, present = objects.padded([np.array([[9.0, 13.0]], np.float32), np.zeros((0, 2))])
    images = objects.draw(model, PIXELS, {"sample_steps": 4}, values, present, generator(3))
    times = [1.0, 0.75, 0.5, 0.25]
    assert len(model.calls) == 4
    for call, t in zip(model.calls, times):
        assert torch.equal(call["t"], torch.full((2,), t)), (call["t"], t)
        assert torch.equal(call["points"], values) and torch.equal(call["present"], present)
    assert standard_normal(model.calls[0]["x_t"])
    for call, t, t_next, after in zip(model.calls, times, times[1:] + [0.0],
                                      [c["x_t"] for c in model.calls[1:]] + [None]):
        x = call["x_t"]
        stepped = x + (t_next - t) * (x - answer(x, call["t"], values, present)) / t
        if after is not None:
            assert torch.allclose(after, stepped, atol=1e-5), t
    assert np.allclose(images, PIXELS.decode(stepped).clip(0, 1), atol=1e-5)
    again = Denoiser(answer)                                           # the generator's noise
    objects.draw(again, PIXELS, {"sample_steps": 4}, values, present, generator(3))
    assert torch.equal(again.calls[0]["x_t"], model.calls[0]["x_t"])


@pytest.mark.parametrize("locality", ["global", "local", "patch"])
def test_objects_each_image_of_a_batch_sees_its_own_locations_in_every_head(locality):
    """Two images asking different locations, one of them fewer (a mask that differs by image):
    the batch's answer for each is its answer alone, in every head (global: a mask per image
    repeated over the heads in nn.MultiheadAttention's order, image-major)."""
    model = perturbed(objects.ObjectsDiT(locality, width=32, depth=2, heads=4))
    x, t = torch.randn(2, 64, 48), torch.tensor([0.3, 0.7])
    points = torch.tensor([[[9.0, 13.0], [20.0, 20.0], [3.0, 28.0]],
                           [[25.0, 6.0], [14.0, 22.0], [28.0, 28.0]]])
    present = torch.tensor([[True, False, False], [True, True, True]])
    with torch.no_grad():
        together = model(x, t, points, present)
        for i in range(2):
            alone = model(x[i:i + 1], t[i:i + 1], points[i:i + 1], present[i:i + 1])[0]
            assert torch.allclose(together[i], alone, atol=1e-5), (locality, i)


def receptive_field(model):
    """How far a pixel's prediction reads, measured by gradients (max-norm px, pixel centre to
    pixel centre or to the location): of x_t, from each pixel of patch (3, 3), one an image, to
    the pixels of x_t its gradient touches; of the locations, from the pixel (15, 15) to the
    locations on a half-pixel lattice through it, in x and in y, one an image, its gradient
    touches."""
    pixels = torch.tensor([(12 + b % 4, 12 + b // 4) for b in range(16)])       # (column, row)
    x_t = torch.randn(1, 64, 48).repeat(16, 1, 1).requires_grad_(True)
    far = torch.tensor([[[4.0, 28.0]]]).repeat(16, 1, 1), torch.ones(16, 1, dtype=torch.bool)
    image = tokenizers.unpatchify(model(x_t, torch.full((16,), 0.5), *far), 4)
    there = image[torch.arange(16), pixels[:, 1], pixels[:, 0]]                     # (16, 3)
    (gradient,) = torch.autograd.grad((there * torch.randn(16, 3)).sum(), x_t)
    b, row, column = torch.nonzero(tokenizers.unpatchify(gradient, 4).abs().sum(-1)).unbind(-1)
    x_t_reach = torch.maximum((column - pixels[b, 0]).abs(), (row - pixels[b, 1]).abs()).max()
    lattice, line = torch.arange(64) * 0.5, torch.full((64,), 15.5)
    points = torch.cat([torch.stack([lattice, line], -1), torch.stack([line, lattice], -1)])
    points = points[:, None].requires_grad_(True)                                  # (128, 1, 2)
    x0_hat = model(torch.randn(1, 64, 48).repeat(128, 1, 1), torch.full((128,), 0.5), points,
                   torch.ones(128, 1, dtype=torch.bool))
    image = tokenizers.unpatchify(x0_hat, 4)
    (gradient,) = torch.autograd.grad((image[:, 15, 15] * torch.randn(3)).sum(), points)
    reached = points.detach()[gradient.abs().sum((1, 2)) > 0, 0]
    return {"x_t": int(x_t_reach), "locations": float((reached - 15.5).abs().amax(-1).max())}


def test_objects_the_patch_arms_receptive_field_measured_by_gradients_is_its_reach():
    """An untrained network, its weights drawn at random (adaLN-Zero's zeros would hide every path),
    4 blocks: the patch arm reads exactly REACH, 3 px of x_t and locations 7.5 px away; the local
    and global arms read further (what the test tells apart)."""
    assert objects.REACH == {"x_t": 3, "locations": 7.5}
    for locality in ("patch", "local", "global"):
        torch.manual_seed(0)
        measured = receptive_field(perturbed(objects.ObjectsDiT(locality, 32, 4, 4)))
        if locality == "patch":
            assert measured == objects.REACH
        else:
            assert measured["x_t"] > 3 and measured["locations"] > 7.5, (locality, measured)


def test_objects_the_readings_hold_the_patch_arms_reach_after_training():
    """After three training steps (the first reaches only the zeroed head), the patch arm reads 1
    within REACH_RADIUS (11.1 px) of a location moved across a patch's edge, where one pixel it
    changes lies 11.0 px away (beyond sqrt 2 x 7.5 = 10.6), and 1 within 6 px of an untold object;
    less than 1 at smaller radii (the readings see a change)."""
    assert objects.REACH_RADIUS == pytest.approx(7.5 * 2 ** 0.5 + 0.5)
    torch.manual_seed(0)
    model = objects.ObjectsDiT("patch", width=32, depth=4, heads=4)
    positions = objects_world.sample_positions([3] * 8, np.random.default_rng(0))
    x_0 = PIXELS.encode(objects_world.render_objects(positions)).float()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(3):
        optimizer.zero_grad()
        objects.flow_loss(model, x_0, *objects.padded(positions), generator()).backward()
        optimizer.step()
    edge = [np.array([[3.5, 8.0], *p[1:]], np.float32) for p in positions]   # +0.5 in x: patch 1
    for t in (0.2, 0.8):
        within = objects.locality(model, x_0, edge, t, generator(), objects.REACH_RADIUS)
        assert float(within) == 1.0, t
        assert float(objects.locality(model, x_0, edge, t, generator(), 7.5 * 2 ** 0.5)) < 1.0
        assert float(objects.pixel_locality(model, x_0, positions, t, generator())) == 1.0, t
        assert float(objects.pixel_locality(model, x_0, positions, t, generator(), 3.0)) < 1.0


def test_the_training_condition_says_all_or_one():
    positions = objects_world.sample_positions([1, 2, 3] * 30, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    assert objects.told(positions, "all", rng) is positions
    one = objects.told(positions, "one", rng)
    assert all(len(o) == 1 and any((o[0] == p).all(1)) for o, p in zip(one, positions))
    picked = [int(np.flatnonzero((p == o[0]).all(1))[0])
              for o, p in zip(one, positions) if len(p) == 3]
    assert set(picked) == {0, 1, 2}                             # any of them, not the first
    points, present = objects.padded([p[:0] for p in positions[:2]] + positions[2:4])
    assert points.shape == (4, 3, 2) and present.sum(1).tolist() == [0, 0, 3, 1]


def test_an_absent_location_is_never_read():
    torch.manual_seed(0)
    for locality in ("global", "local", "patch"):
        model = objects.ObjectsDiT(locality, width=32, depth=1, heads=4)
        for p in model.parameters():
            torch.nn.init.normal_(p, std=0.2)
        x, t = torch.randn(2, 64, 48), torch.rand(2)
        points = torch.tensor([[[9.0, 13.0], [20.0, 20.0]]] * 2)
        present = torch.tensor([[True, False]] * 2)
        other = points.clone()
        other[:, 1] = torch.tensor([3.0, 28.0])
        with torch.no_grad():
            answer = model(x, t, points, present)
            assert torch.allclose(answer, model(x, t, other, present)), locality
            assert not torch.allclose(answer, model(x, t, other, torch.ones_like(present)))


# ------------------------------------------------------------------- the command line
FAST = ["--steps", "4", "--eval-every", "2", "--samples-per-comp", "2", "--batch-size", "8",
        "--sample-steps", "2", "--device", "cpu"]
ONE_LOCAL = ["--cond", "one", "--locality", "local"]


def test_a_run_writes_its_files_and_resumes_to_the_same_numbers(tmp_path):
    scripts.main("objects.py", *FAST, *ONE_LOCAL, "--out", tmp_path / "a")
    lines = [json.loads(line) for line in (tmp_path / "a" / "metrics.jsonl").open()]
    assert [m["step"] for m in lines] == [2, 3, 4]
    for key in ("exact", "found", "extra", "locality", "pixel_locality", "locality_within_reach",
                "trained", "beyond", "found_trained", "found_beyond"):
        assert key in lines[-1], key
    assert set(lines[-1]["exact"]) == {str(n) for n in range(11)}          # 0 to 10 asked
    assert set(lines[-1]["pixel_locality"]) == {"0.2", "0.5", "0.8"}
    kept = np.load(tmp_path / "a" / "samples.npz")
    assert kept["images"].shape == (22, 32, 32, 3)
    assert kept["counts"].tolist() == sorted([*range(11)] * 2)
    assert (tmp_path / "a" / "samples.png").stat().st_size > 5000
    scripts.main("objects.py", *FAST, "--steps", "3", *ONE_LOCAL, "--out", tmp_path / "b")
    scripts.main("objects.py", *FAST, *ONE_LOCAL, "--out", tmp_path / "b", "--resume")
    resumed = [json.loads(line) for line in (tmp_path / "b" / "metrics.jsonl").open()]
    for m in resumed + lines:
        m.pop("seconds")
    assert resumed == lines


def test_objects_the_patch_arm_runs_and_reads_one_within_its_reach(tmp_path):
    """The run's own evaluation of the trained patch arm: locality within REACH_RADIUS and
    pixel_locality within 6 px read 1 at every noise level; the closing table prints them."""
    said = scripts.main("objects.py", *FAST, "--eval-every", "4", "--locality", "patch",
                        "--out", tmp_path / "p")
    assert json.loads((tmp_path / "p" / "config.json").read_text())["locality"] == "patch"
    (last,) = [json.loads(line) for line in (tmp_path / "p" / "metrics.jsonl").open()]
    for key in ("locality_within_reach", "pixel_locality"):
        assert last[key] == {"0.2": 1.0, "0.5": 1.0, "0.8": 1.0}, key
    assert "exact (found): trained counts 1-3" in said and "| beyond, 4-10 " in said
    assert "pixel_locality (the share of an untold object's gradient within 6 px)" in said
    assert "locality_within_reach (the share of it within 11.1 px, REACH): t=0.2 100%" in said


# ---------------------------------------------------------------- the kept runs, compared
# results/objects/runs: made with these settings (config.json), asking 0 to 8 objects
KEPT = {"steps": 1500, "batch_size": 64, "lr": 0.002, "eval_every": 250, "samples_per_comp": 16,
        "lr_schedule": "constant", "weight_decay": 0.0, "width": 128, "depth": 4, "heads": 4,
        "sample_steps": 25, "time_dist": "logit-normal", "warm_up_steps": 200,
        "adamw_betas": [0.9, 0.99], "clip_norm": 1.0, "ema_decay": 0.999}
# The code that made them, trained for 4 steps with their --cond and --locality at seed 0, width
# 32 and 8 images a step (to be quick; the same code path): each step's loss, and the head's
# |weights| summed after the last (the heads of the four differ from the second step on)
KEPT_STEPS = {
    ("all", "global"): ([2.5796844959259033, 2.870720863342285, 2.706249475479126,
                         2.0116257667541504], 0.1522835620198748),
    ("all", "local"): ([2.5796844959259033, 2.8707361221313477, 2.706289052963257,
                        2.0116724967956543], 0.14773638332280825),
    ("one", "global"): ([2.5796844959259033, 2.870720863342285, 2.706249475479126,
                         2.0116257667541504], 0.1522836426483991),
    ("one", "local"): ([2.5796844959259033, 2.870734453201294, 2.7062692642211914,
                        2.0116376876831055], 0.15045327768984862)}


def first_steps(*flags, steps=4):
    """objects.train for a few steps on the CPU, evaluations and checkpoints left out: (each
    step's loss, the network's head after the last step, its |weights| summed)."""
    _, args = objects.parse([*flags, "--steps", str(steps), "--device", "cpu", "--out", "unused"])
    losses, kept, flow_loss = [], {}, objects.flow_loss

    def loss(*args):
        losses.append(flow_loss(*args))
        return losses[-1]

    class Checkpoints(runs.Checkpoints):
        def save(self, step):
            kept.update(self.state(step))
    with pytest.MonkeyPatch.context() as patch, torch.random.fork_rng(devices=[]):
        patch.setattr(objects, "flow_loss", loss)
        patch.setattr(objects, "draw_and_read", lambda *_: {"step": steps})
        patch.setattr(runs, "Checkpoints", Checkpoints)
        objects.train(dict(vars(args), model=objects.NAME))
    losses = [loss.item() for loss in losses]
    head = [p for name, p in kept["model"].items() if name.startswith("head.")]
    return losses, float(sum(p.double().abs().sum() for p in head))


@pytest.mark.parametrize("cond, locality", sorted(KEPT_STEPS))
def test_objects_the_kept_runs_flags_train_as_they_did(cond, locality):
    """--cond and --locality as the kept runs had them: the same settings, the same first steps
    (the numbers their code gave on this machine's kind: within 1e-6)."""
    _, args = objects.parse(["--cond", cond, "--locality", locality])
    assert {k: getattr(args, k) for k in KEPT} == KEPT
    losses, head = first_steps("--cond", cond, "--locality", locality, "--seed", "0",
                               "--width", "32", "--batch-size", "8")
    expected_losses, expected_head = KEPT_STEPS[cond, locality]
    assert losses == pytest.approx(expected_losses, rel=1e-6)
    assert head == pytest.approx(expected_head, rel=1e-6)


def test_objects_0_to_8_asked_are_asked_as_the_kept_runs_asked_them(tmp_path):
    """The kept runs asked 0 to 8 objects, 16 samples each. An evaluation asks 0 to 10 in order,
    so its first 144 samples ask the same locations, and (on the CPU) start from the same noise:
    exact, found and extra at 0 to 8 compare with the kept runs'. The locality readings, drawn
    after, do not (their locations and noise follow the 176 samples)."""
    _, args = objects.parse(["--seed", "1", "--device", "cpu", "--out", str(tmp_path)])
    config = dict(vars(args), model=objects.NAME)
    runs.start_clock(config)
    asked = []

    def draw(model, tokenizer, config, values, present, generator):
        asked.append((values, present, generator.get_state()))
        return np.zeros((len(values), 32, 32, 3), np.float32)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(objects, "draw", draw)
        patch.setattr(objects, "save_grid", lambda *_: None)
        objects.draw_and_read(objects.ObjectsDiT("global", 16, 1, 2), PIXELS, config, 1, 0.0)
    ((values, present, state),) = asked
    kept = objects_world.sample_positions(np.repeat(range(9), 16), np.random.default_rng(1))
    points, there = objects.padded(kept)                                    # (144, 8, 2)
    assert values.shape == (176, 10, 2) and not present[:144, 8:].any()
    assert torch.equal(values[:144, :8], points) and torch.equal(present[:144, :8], there)
    assert torch.equal(state, torch.Generator().manual_seed(2).get_state())   # seed + 1, unused

    def noise(n):
        return torch.randn((n, 64, 48), generator=torch.Generator().manual_seed(2))
    assert torch.equal(noise(176)[:144], noise(144))         # the CPU's draws: 144 come first


@pytest.mark.parametrize("flags, message", [
    (["--cond", "two"], "invalid choice: 'two'"),
    (["--locality", "near"], "invalid choice: 'near'"),
    (["--steps", "-3"], "--steps must be a positive integer, got -3"),
    (["--sample-steps", "0"], "--sample-steps must be a positive integer"),
    (["--out", "/proc/x"], "--out /proc/x: cannot make this folder")])
def test_bad_flags_are_refused_with_a_message(flags, message, tmp_path, capsys):
    rest = [] if "--out" in flags else ["--out", str(tmp_path / "x")]
    code, said = scripts.refused(objects, [*FAST[:-2], *flags, *rest], capsys)
    assert code == 2 and message in said, said[-500:]
    assert not (tmp_path / "x").exists()
