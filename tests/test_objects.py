"""objects.py and its world: the renderer, the object counter, the local conditioning map, the
locality reading, and the script's command line."""
import json

import numpy as np
import pytest
import torch

import data
import objects
import probe
import scripts


# ------------------------------------------------------------------------- the world
def test_the_renderer_puts_n_separate_discs_where_asked():
    rng = np.random.default_rng(0)
    for n in (0, 1, 3, 8, 25):
        positions = data.sample_positions([n] * 20, rng)
        for image, asked in zip(data.render_objects(positions), positions):
            found = probe.find_objects(image)
            assert len(found) == n                                          # never two touching
            centres = np.array([c for c, _ in found]).reshape(-1, 2)
            assert all(np.linalg.norm(centres - p, axis=1).min() < 0.3 for p in asked)
    with pytest.raises(ValueError, match="cannot place 26 objects"):
        data.sample_positions([26], rng)


def canvas(*discs):
    """A hand-made image: a disc of the given radius at each (x, y, radius)."""
    image = np.zeros((data.IMAGE_SIZE, data.IMAGE_SIZE, 3), np.float32)
    grid = np.arange(data.IMAGE_SIZE) + 0.5
    for x, y, r in discs:
        d = np.sqrt((grid[None, :] - x) ** 2 + (grid[:, None] - y) ** 2) - r
        image = np.maximum(image, np.clip(0.5 - d, 0, 1)[..., None] * data.OBJECT_COLOR)
    return image


def test_the_counter_on_hand_made_canvases():
    asked = [(4.0, 4.0), (16.0, 10.0), (28.0, 22.0)]
    right = canvas(*[(x, y, 1.8) for x, y in asked])
    assert probe.objects_right(right, asked)
    for n in range(9):                                                      # 0 to 8, each where asked
        cells = data.CELLS[:n]
        assert probe.objects_right(canvas(*[(x, y, 1.8) for x, y in cells]), cells), n
    wrong = {"one missing": canvas(*[(x, y, 1.8) for x, y in asked[:2]]),
             "one extra": canvas(*[(x, y, 1.8) for x, y in asked], (10, 28, 1.8)),
             "two touching": canvas(*[(x, y, 1.8) for x, y in asked[1:]], (4, 4, 1.8), (7.5, 4, 1.8)),
             "a fragment": canvas(*[(x, y, 1.8) for x, y in asked[1:]], (4, 4, 0.9)),
             "3 px off": canvas(*[(x, y, 1.8) for x, y in asked[1:]], (7.0, 4.0, 1.8))}
    for name, image in wrong.items():
        assert not probe.objects_right(image, asked), name
    speck = right.copy()
    speck[20, 5] = data.OBJECT_COLOR                                        # one stray pixel is no object
    assert probe.objects_right(speck, asked)


# ----------------------------------------------------------------------- the method
def test_local_conditioning_reaches_the_patches_in_and_next_to_a_location():
    points, present = torch.tensor([[[9.0, 13.0], [30.0, 2.0]]]), torch.tensor([[True, False]])
    near = objects.neighbours(points, present)[0]                           # (64, 2)
    cells = {(j % 8, j // 8) for j in torch.nonzero(near[:, 0]).flatten().tolist()}
    assert cells == {(x, y) for x in (1, 2, 3) for y in (2, 3, 4)}        # patch (2, 3) and its 8 around
    assert not near[:, 1].any()                                            # an absent location reaches none


@pytest.mark.parametrize("trained", [False, True])
def test_moving_one_location_moves_only_its_neighbourhood_of_the_local_condition(trained):
    """At initialisation and after a training step, the condition each token receives changes only in
    the 3x3 patches around the moved location, and the first block's output only within one more ring."""
    torch.manual_seed(0)
    model = objects.ObjectsDiT("local", width=32, depth=2, heads=4)
    if trained:
        positions = data.sample_positions([3] * 8, np.random.default_rng(0))
        x_0 = data.ContinuousTokenizer("pixels").encode(data.render_objects(positions)).float()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        loss = objects.flow_loss(model, x_0, *objects.padded(positions), torch.Generator().manual_seed(0))
        loss.backward()
        optimizer.step()
    points, present = torch.tensor([[[9.0, 13.0], [26.0, 26.0]]]), torch.ones(1, 2, dtype=torch.bool)
    moved = points.clone()
    moved[0, 0] += torch.tensor([1.0, 0.5])                                 # still in patch (2, 3)
    change = (model.local_condition(points, present) - model.local_condition(moved, present)).abs().sum(-1)[0]
    touched = {(j % 8, j // 8) for j in torch.nonzero(change > 0).flatten().tolist()}
    assert touched == {(x, y) for x in (1, 2, 3) for y in (2, 3, 4)}


class Discs(torch.nn.Module):
    """A hand-made denoiser that draws a disc at each asked location, whatever it is shown; spread:
    one that moves the whole canvas with the first location instead."""

    def __init__(self, spread=False):
        super().__init__()
        self.spread, self.p = spread, torch.nn.Parameter(torch.zeros(1))

    def forward(self, x_t, t, points, present):
        images = data.render_objects([p[m].numpy() for p, m in zip(points, present)])
        x = data.ContinuousTokenizer("pixels").encode(images).float()
        return 0 * x + points[:, :1, :1] / 10 if self.spread else x


def test_the_locality_reading_on_denoisers_whose_answer_is_known():
    positions = data.sample_positions([3] * 8, np.random.default_rng(0))
    x_0 = data.ContinuousTokenizer("pixels").encode(data.render_objects(positions)).float()
    g = torch.Generator().manual_seed(0)
    assert objects.locality(Discs(), x_0, positions, 0.5, g) > 0.99
    everywhere = objects.locality(Discs(spread=True), x_0, positions, 0.5, g)
    assert 0.05 < everywhere <= np.pi * 36 / 1024                          # the 6 px disc's share, or less at an edge


def test_the_training_condition_says_all_or_one():
    positions = data.sample_positions([1, 2, 3] * 30, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    assert objects.told(positions, "all", rng) is positions
    one = objects.told(positions, "one", rng)
    assert all(len(o) == 1 and any((o[0] == p).all(1)) for o, p in zip(one, positions))
    picked = [int(np.flatnonzero((p == o[0]).all(1))[0]) for o, p in zip(one, positions) if len(p) == 3]
    assert set(picked) == {0, 1, 2}                                         # any of them, not the first
    points, present = objects.padded([p[:0] for p in positions[:2]] + positions[2:4])
    assert points.shape == (4, 3, 2) and present.sum(1).tolist() == [0, 0, 3, 1]


def test_an_absent_location_is_never_read():
    torch.manual_seed(0)
    for locality in ("global", "local"):
        model = objects.ObjectsDiT(locality, width=32, depth=1, heads=4)
        for p in model.parameters():
            torch.nn.init.normal_(p, std=0.2)
        x, t = torch.randn(2, 64, 48), torch.rand(2)
        points, present = torch.tensor([[[9.0, 13.0], [20.0, 20.0]]] * 2), torch.tensor([[True, False]] * 2)
        other = points.clone()
        other[:, 1] = torch.tensor([3.0, 28.0])
        with torch.no_grad():
            assert torch.allclose(model(x, t, points, present), model(x, t, other, present)), locality
            assert not torch.allclose(model(x, t, points, present), model(x, t, other, torch.ones_like(present)))


# ------------------------------------------------------------------- the command line
FAST = ["--steps", "4", "--eval-every", "2", "--samples-per-comp", "2", "--batch-size", "8", "--sample-steps", "2",
        "--device", "cpu"]


def test_a_run_writes_its_files_and_resumes_to_the_same_numbers(tmp_path):
    scripts.main("objects.py", *FAST, "--cond", "one", "--locality", "local", "--out", tmp_path / "a")
    lines = [json.loads(line) for line in open(tmp_path / "a" / "metrics.jsonl")]
    assert [m["step"] for m in lines] == [2, 3, 4]
    for key in ("exact", "found", "extra", "locality", "trained", "beyond"):
        assert key in lines[-1], key
    assert set(lines[-1]["exact"]) == {str(n) for n in range(9)}
    kept = np.load(tmp_path / "a" / "samples.npz")
    assert kept["images"].shape == (18, 32, 32, 3) and kept["counts"].tolist() == sorted([*range(9)] * 2)
    assert (tmp_path / "a" / "samples.png").stat().st_size > 5000
    scripts.main("objects.py", *FAST, "--steps", "3", "--cond", "one", "--locality", "local", "--out", tmp_path / "b")
    scripts.main("objects.py", *FAST, "--cond", "one", "--locality", "local", "--out", tmp_path / "b", "--resume")
    resumed = [json.loads(line) for line in open(tmp_path / "b" / "metrics.jsonl")]
    strip = lambda m: {k: v for k, v in m.items() if k != "seconds"}
    assert [strip(m) for m in resumed] == [strip(m) for m in lines]


@pytest.mark.parametrize("flags, message", [(["--cond", "two"], "invalid choice: 'two'"),
                                            (["--locality", "near"], "invalid choice: 'near'"),
                                            (["--steps", "-3"], "--steps must be a positive integer, got -3"),
                                            (["--sample-steps", "0"], "--sample-steps must be a positive integer"),
                                            (["--out", "/proc/x"], "--out /proc/x: cannot make this folder")])
def test_bad_flags_are_refused_with_a_message(flags, message, tmp_path, capsys):
    rest = [] if "--out" in flags else ["--out", str(tmp_path / "x")]
    code, said = scripts.refused(objects, [*FAST[:-2], *flags, *rest], capsys)
    assert code == 2 and message in said, said[-500:]
    assert not (tmp_path / "x").exists()
