"""worlds/bars.py, the course's world (A11): its bar drawn as its description says, its latents
read back, its reading on either side of each rule, and a run of it end to end. The course's
checks (course/checks/test_a11_world.py) hold the interface; these hold the numbers."""
import numpy as np
import pytest
import torch

import runs
import scripts
from worlds import bars as W


def one(orientation=0, color=(0.9, 0.55, 0.1), length=20.0, cx=16.0, cy=16.0):
    """The latents (1, 7) of one bar."""
    return np.array([[orientation, *color, length, cx, cy]], np.float32)


def test_a_bar_covers_its_length_times_its_thickness_and_stands_up_on_bit_one():
    flat, upright = W.render(one(0, length=20.0))[0], W.render(one(1, length=20.0))[0]
    assert np.isclose(flat[..., 0].sum() / 0.9, 20.0 * W.THICKNESS, rtol=0.02)
    assert np.allclose(upright, flat.transpose(1, 0, 2), atol=1e-6)     # the same bar, turned
    rows = np.nonzero(flat.max((1, 2)) > 0.5)[0]
    assert len(rows) == W.THICKNESS and (flat.max((0, 2)) > 0.5).sum() == 20   # 4 rows, 20 columns
    assert np.allclose(flat[16, 16], [0.9, 0.55, 0.1])                    # its colour, in full


def test_latents_hold_the_asked_class_within_its_ranges_and_class_bits_reads_them_back():
    bits = W.requests(200)
    latents = W.sample_latents(bits, np.random.default_rng(0))
    assert np.array_equal(W.class_bits(torch.as_tensor(latents)).numpy(), bits)
    colour = np.abs(latents[:, 1:4] - W.CLASS_COLORS[bits[:, 1]]).max()
    low, high = W.LENGTHS[bits[:, 2]].T
    assert colour <= W.COLOR_JITTER and np.all((latents[:, 4] >= low) & (latents[:, 4] <= high))
    assert np.abs(latents[:, 5:7] - W.IMAGE_SIZE / 2).max() <= W.POSITION_JITTER
    assert latents[:, 4].max() > 22 and latents[:, 4].min() < 9.2        # the ranges are used


@pytest.mark.parametrize("length, short", [(15.0, 1), (16.0, 0)])
def test_class_bits_and_the_reading_part_long_from_short_between_the_ranges(length, short):
    latents = one(0, length=length)
    assert int(W.class_bits(torch.as_tensor(latents))[0, 2]) == short
    assert W.readings(W.render(latents), [[0, 1, short]])["read"][0, 2] == short


def test_every_real_render_is_read_as_its_code():
    bits = W.requests(60)
    composed = W.readings(W.render(W.sample_latents(bits, np.random.default_rng(1))),
                          bits)["composed"]
    assert composed.all()


def test_the_reading_refuses_no_bar_two_bars_and_a_smear_and_reads_the_colour_asked():
    bar = W.render(one(0, length=20.0, cy=10.0))
    two = np.clip(bar + W.render(one(0, length=20.0, cy=22.0)), 0, 1)
    smear = bar.copy()
    smear[0, 20:26, 4:28] = 0.5                                            # a band beside it
    faint = bar * 0.2                                                      # too faint to be a bar
    images = np.concatenate([bar, two, smear, faint, np.zeros_like(bar)])
    got = W.readings(images, [[0, 1, 0]] * 5)
    assert got["legible"].tolist() == [True, False, False, False, False]
    green = W.render(one(1, color=W.CLASS_COLORS[0], length=10.0))
    assert W.readings(green, [[1, 0, 1]])["composed"].all()
    assert not W.readings(green, [[1, 1, 1]])["composed"].any()           # asked orange


def test_a_bar_off_by_a_few_pixels_is_legible_and_one_off_by_more_is_not():
    """Stray pixels of 0.28: too faint to move the fit (it weighs pixels above 0.3), each one off
    the fitted bar by more than BAD_PIXEL."""
    bar = W.render(one(0, length=20.0))
    near, far = bar.copy(), bar.copy()
    near[0, 2, 2:2 + W.MAX_BAD_PIXELS] = 0.28
    far[0, 2, 2:3 + W.MAX_BAD_PIXELS] = 0.28
    assert W.readings(np.concatenate([near, far]), [[0, 1, 0]] * 2)["legible"].tolist() == \
        [True, False]


def test_discrete_conditions_give_the_class_colour_and_length_and_hide_the_place():
    bits = W.requests(3)
    latents = W.sample_latents(bits, np.random.default_rng(2))
    values, present = W.conditioning(latents, "discrete", train=False)
    raw = values * torch.as_tensor(W.COND_SCALE) + torch.as_tensor(W.COND_CENTRE)
    want = np.concatenate([W.CLASS_COLORS[bits[:, 1]], W.LENGTHS.mean(1)[bits[:, 2], None]], 1)
    assert torch.allclose(raw[:, 1:5], torch.as_tensor(want, dtype=torch.float32))
    assert present[:, :3].all() and not present[:, 3].any()
    values, present = W.conditioning(latents, "continuous")
    assert torch.allclose(values * torch.as_tensor(W.COND_SCALE) + torch.as_tensor(W.COND_CENTRE),
                          torch.as_tensor(latents), atol=1e-5) and present.all()
    with pytest.raises(ValueError, match="'text'"):
        W.conditioning(latents, "text")


def test_codes_name_their_bar_and_an_unknown_code_is_refused_by_name():
    assert W.describe("110") == "orange long vertical bar" and W.split_of("111") == "level2"
    assert [W.split_of(c) for c in W.COMPOSITIONS].count("seen") == 4
    bits = W.training_set(5, seed=0)[1]
    assert sorted({W.bits_to_code(b) for b in bits}) == list(W.SEEN)
    with pytest.raises(ValueError, match="'112'"):
        W.split_of("112")


def test_a_run_of_the_bars_world_prints_a_row_a_composition(tmp_path):
    out = tmp_path / "run"
    printed = scripts.main("dit.py", *scripts.ONCE, "--world", "bars", "--samples-per-comp", "1",
                           "--train-per-comp", "2", "--out", out)
    rows = [line.split()[0] for line in printed.splitlines() if line[:3] in W.COMPOSITIONS]
    assert rows == list(W.COMPOSITIONS) and "level-2" in printed
    assert set(runs.read_metrics(out)[-1]["acc"]) == set(W.COMPOSITIONS)
    assert (out / "samples.png").exists()
