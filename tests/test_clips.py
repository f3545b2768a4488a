"""The clip world (clips.py): the study's Table 12 split in time. Its interface, a first frame that
does not tell the direction, readers that accept real clips and refuse each kind of clip built
wrong on purpose, CRA against a direct computation, and --world clips through dit and maskgit."""
import json

import numpy as np
import pytest
import torch

from worlds import clips
import data
import judge
import runs
import scripts
from worlds import shapes3d
import worlds

W = clips


def test_the_split_is_the_studys_table_12():
    assert worlds.world("clips") is W and W.NAME == "clips"
    assert [W.describe(c) for c in W.SEEN] == ["day-left", "day-straight", "night-straight",
                                               "night-right"]
    assert [W.describe(c) for c in W.LEVEL1] == ["day-right", "night-left"]
    assert W.SPLITS == {"seen": W.SEEN, "level1": W.LEVEL1, "level2": ()}
    assert sorted(W.SEEN + W.LEVEL1) == list(W.COMPOSITIONS) and len(W.COMPOSITIONS) == 6
    assert [W.split_of(c) for c in ("00", "01", "02", "10", "11", "12")] == [
        "seen", "seen", "level1", "level1", "seen", "seen"]
    assert list(W.GROUPS) == [W.describe(c) for c in W.COMPOSITIONS]
    assert W.code_to_bits("02") == (0, 2) and W.bits_to_code((1, 0)) == "10"
    with pytest.raises(ValueError, match="'03'"):
        W.code_to_bits("03")


def test_the_frames_lie_as_a_2x2_mosaic_in_reading_order():
    frames = np.random.default_rng(0).uniform(size=(2, 4, 16, 16, 3)).astype(np.float32)
    images = W.mosaic(frames)
    assert images.shape == (2, 32, 32, 3)
    for k, (top, left) in enumerate([(0, 0), (0, 16), (16, 0), (16, 16)]):
        assert np.array_equal(images[:, top:top + 16, left:left + 16], frames[:, k])
    assert np.array_equal(W.frames_of(images), frames)


def test_frame_1_is_the_same_for_the_three_directions_and_only_motion_tells_them_apart():
    rng = np.random.default_rng(1)
    for time in (0, 1):
        latents = W.sample_latents([[time, 0]] * 3, rng)
        latents[1:] = latents[0]
        latents[:, 2] = W.LATERAL.mean(1)                                # left, straight, right
        frames = W.frames_of(W.render(latents))
        assert np.array_equal(frames[0, 0], frames[1, 0]) and np.array_equal(frames[0, 0],
                                                                              frames[2, 0])
        assert np.abs(frames[0, 3] - frames[2, 3]).max() > 0.2
        assert np.abs(frames[1, 0] - frames[1, 3]).max() > 0.2          # straight moves too


def test_every_real_clip_reads_back_as_its_class_by_class_bits_and_by_the_reading():
    images, bits, latents = W.make_dataset(W.COMPOSITIONS, 10, seed=3)
    assert images.shape == (60, 32, 32, 3) and 0 <= images.min() and images.max() <= 1
    assert np.array_equal(W.class_bits(torch.as_tensor(latents)).numpy(), bits)
    judged = W.readings(images, bits)
    assert judged["composed"].mean() >= 0.99 and judged["precise"].mean() >= 0.95
    assert np.array_equal(judged["read"], bits)


def test_the_calibration_rates_hold():
    accepted, rejected, asked = W.calibration_images(30, seed=5)
    for name, images in accepted.items():
        assert W.readings(images.astype(np.float32), asked)["composed"].mean() >= 0.95, name
    for name, images in rejected.items():
        assert (~W.readings(images.astype(np.float32), asked)["legible"]).mean() >= 0.95, name


def test_each_wrong_kind_is_refused_though_every_frame_of_it_is_a_render():
    """A bend that changes mid-clip, two times of day, a still or reversed clip: each frame alone
    is the renderer's, so only the reading across frames refuses them."""
    accepted, rejected, asked = W.calibration_images(20, seed=2)
    meant = {"bends another way mid-clip": "one bend", "frames of two times of day": "one time",
             "still (frame 1 four times)": "nearing", "backwards (frames reversed)": "nearing",
             "frames shuffled": "nearing"}
    for name, check in meant.items():
        read = W.read_clips(rejected[name])
        passed = W.checks(read)
        assert passed["no patch"].all() and not passed[check].any(), name      # the check named
        assert not W.legible(read).any(), name
    for name, check in (("a 4x4 patch gone white", "no patch"), ("blank", "lit as drawn"),
                        ("a strange-coloured 2x2 block", "no stray colour")):
        assert not W.checks(W.read_clips(rejected[name]))[check].any(), name
    for name, images in accepted.items():
        assert all(ok.all() for ok in W.checks(W.read_clips(images)).values()), name


def test_samples_flag_reports_each_asked_class_and_the_share_each_check_refuses(tmp_path, capsys):
    """Real clips of every class, and day-right's second half with a white patch: day-right reads
    composed 50.0% and refused by "no patch" 50.0%, every other class 100.0% and 0.0%."""
    rng = np.random.default_rng(3)
    asked = np.repeat([W.code_to_bits(c) for c in W.COMPOSITIONS], 4, 0)             # (24, 2)
    images = W.render(W.sample_latents(asked, rng))
    patched = W.frames_of(images[10:12]).copy()
    patched[:, 1, 4:8, 4:8] = 0.9                                      # a 4x4 patch gone white
    images[10:12] = W.mosaic(patched)
    np.savez(tmp_path / "samples.npz", images=(images * 255).round().astype(np.uint8),
             factors=asked)
    W.main(["--samples", str(tmp_path / "samples.npz")])
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert [line.split()[0] for line in lines] == [W.describe(c) for c in W.COMPOSITIONS]
    for code, line in zip(W.COMPOSITIONS, lines):
        broken = code == "02"
        assert f"composed {'50.0' if broken else '100.0'}%" in line, line
        assert f"no patch {'50.0' if broken else '0.0'}%" in line and "one bend 0.0%" in line, line


def test_a_clip_of_another_class_reads_as_that_class_not_the_asked_one():
    rng = np.random.default_rng(4)
    asked = np.array([[0, 2], [1, 0], [0, 0], [1, 1]])
    drawn = np.array([[0, 0], [1, 2], [1, 0], [1, 2]])
    judged = W.readings(W.render(W.sample_latents(drawn, rng)), asked)
    assert judged["legible"].all() and not judged["composed"].any()
    assert np.array_equal(judged["read"], drawn)


def test_the_condition_is_exact_or_the_class_and_hides_what_a_mode_hides():
    latents = W.sample_latents([[0, 0], [1, 2]], np.random.default_rng(0))
    values, present = W.conditioning(latents, "continuous")
    assert values.shape == (2, W.COND_GROUPS[-1][2]) and present.all()
    assert torch.allclose(values * torch.as_tensor(W.COND_SCALE) + torch.as_tensor(W.COND_CENTRE),
                          torch.as_tensor(latents), atol=1e-5)
    exact, hidden = W.conditioning(latents, "discrete")
    assert exact[:, 0].tolist() == [-1, 1] and exact[:, 1].tolist() == [0, 0]
    assert exact[:, 2].tolist() == pytest.approx([-1.45 / 1.45, 1.45 / 1.45])
    assert hidden[:, 2].eq(False).all() and hidden[:, :2].all()
    many = W.sample_latents(np.zeros((4000, 2), np.int64), np.random.default_rng(0))
    one = W.conditioning(many, "dropout", 0.3, torch.Generator().manual_seed(4))[1]
    two = W.conditioning(many, "dropout", 0.3, torch.Generator().manual_seed(4))[1]
    assert torch.equal(one, two) and abs((~one[:, :2]).float().mean() - 0.3) < 0.03
    assert one[:, 2].all()
    with pytest.raises(ValueError, match="text"):
        W.conditioning(latents, "text")


def test_class_bits_reads_the_direction_from_the_lateral_speed():
    latents = torch.zeros(5, 6)
    latents[:, 0] = torch.tensor([0, 1, 0, 1, 0])
    latents[:, 2] = torch.tensor([-1.2, -0.12, 0.12, 1.2, 0.0])
    assert W.class_bits(latents).tolist() == [[0, 0], [1, 1], [0, 1], [1, 2], [0, 1]]


@pytest.mark.parametrize("kind", ["fixed", "fresh"])
def test_training_data_holds_the_seen_classes_only(kind):
    training = data.TrainingData(kind, 2, "continuous", 0.1, lambda x: x, world=W)
    images, values, _ = training.batch(60, torch.Generator().manual_seed(0))
    read = W.read_clips(np.asarray(images))["bits"]
    assert {W.bits_to_code(b) for b in read} == set(W.SEEN) and values.shape == (60, 6)


def test_cra_is_the_class_of_the_nearest_real_clip_and_hit1_the_share_on_the_asked_one(
        monkeypatch):
    """Against a direct computation: frame 1 and the frame differences, pooled 2x2, by hand."""
    monkeypatch.setattr(W, "HELD_OUT_PER_CODE", 4)
    monkeypatch.setattr(W, "_REFERENCE", {})
    real, real_bits, _ = W.make_dataset(W.COMPOSITIONS, 4, W.REFERENCE_SEED)
    drawn = np.array([[0, 2], [0, 2], [0, 0], [0, 0], [0, 0], [1, 0], [1, 2], [1, 1], [0, 0]])
    asked = np.array([[0, 2]] * 5 + [[1, 0]] * 4)          # day-right: 2 of 5 drawn as asked
    images = W.render(W.sample_latents(drawn, np.random.default_rng(8)))

    def by_hand(clips_):
        f = clips_.reshape(len(clips_), 2, 8, 2, 2, 8, 2, 3).mean((3, 6))   # (N, 2, 8, 2, 8, 3)
        f = f.transpose(0, 1, 3, 2, 4, 5).reshape(len(clips_), 4, -1)       # frames 1-4, pooled
        return np.concatenate([f[:, 0], f[:, 1] - f[:, 0], f[:, 2] - f[:, 1], f[:, 3] - f[:, 2]],
                              1)
    assert np.allclose(W.features(images).numpy(), by_hand(images), atol=1e-6)
    distance = ((by_hand(images)[:, None] - by_hand(real)[None]) ** 2).sum(-1)
    nearest = np.array([W.bits_to_code(b) for b in real_bits[distance.argmin(1)]])
    assert list(nearest) == [W.bits_to_code(d) for d in drawn]        # real clips: their class
    found = W.cra(images, asked)
    assert found["row"] == {"02": {"00": 0.6, "01": 0.0, "02": 0.4, "10": 0.0, "11": 0.0,
                                   "12": 0.0},
                            "10": {"00": 0.25, "01": 0.0, "02": 0.0, "10": 0.25, "11": 0.25,
                                   "12": 0.25}}
    assert found["hit1"] == {"02": 0.4, "10": 0.25}
    assert found["hit_refused"] == {"02": 0.0, "10": 0.0}                     # real: composed
    patched = W.frames_of(images).copy()
    patched[[0, 5], 1, 4:8, 4:8] = 0.9                         # a white block in two hits
    found = W.cra(W.mosaic(patched), asked)
    assert found["hit1"] == {"02": 0.4, "10": 0.25}          # retrieval passes a patch through
    assert found["hit_refused"] == {"02": 0.2, "10": 0.25}                   # the reading not


def test_a_block_of_its_own_sky_below_the_horizon_is_refused_by_day_and_at_night_alike():
    """The patch is measured against the frame's light: a night frame is 0.3 of a day's, so an
    absolute limit would pass at night the block it refuses by day. A block a little lighter or
    darker than the ground around it is forgiven at either time, as a person forgives it."""
    for time in (0, 1):
        asked = np.array([[time, d] for d in range(3) for _ in range(4)])
        frames = W.frames_of(W.render(W.sample_latents(asked, np.random.default_rng(time))))
        skied, shaded = frames.copy(), frames.copy()
        for i in range(len(asked)):
            k, column = i % 4, (i // 4) % 4
            block = slice(4 * column, 4 * column + 4)
            skied[i, k, 8:12, block] = frames[i, k, :4, block]
            shaded[i, k, 12:16, :4] *= 0.9                                  # the ground, 10% darker
        assert not W.readings(W.mosaic(skied), asked)["legible"].any(), time
        assert W.readings(W.mosaic(shaded), asked)["composed"].all(), time
        read = W.read_clips(W.mosaic(skied))
        assert (read["patch"].max(1) > W.LEGIBLE["max_patch"]).all(), time
        assert (W.read_clips(W.mosaic(shaded))["patch"].max(1) < W.LEGIBLE["max_patch"]).all()


def test_the_vanishing_point_is_read_between_the_grids_points():
    """The fit's grid is 0.25 px; the parabola through the best point and its neighbours reads
    real clips' vanishing points to within 0.06 px (the grid alone: within 0.125)."""
    latents = W.sample_latents(W.requests(20), np.random.default_rng(0))
    read = W.read_clips(W.render(latents))
    true = latents[:, 3, None] + latents[:, 2, None] * np.arange(W.FRAMES)
    assert np.abs(read["vanish"] - true).max() < 0.06
    assert np.abs(read["vanish"] - true).mean() < 0.02
    on_grid = W.VANISH_GRID[np.abs(true[..., None] - W.VANISH_GRID).argmin(-1)]
    assert np.abs(on_grid - true).mean() > 0.04                     # what the grid alone reads


@pytest.mark.parametrize("time", [0, 1])
def test_a_bend_that_stalls_or_turns_back_in_a_step_is_not_one_bend(time):
    """A right bend's last step: half a pixel passes "one bend" (min_bend_step 0.4), a quarter
    pixel, none or back does not; read between the fit's grid points, so a quarter-pixel step is
    told from a stall."""
    depth = 0.25 + 0.15 * np.arange(4)

    def clip(vanish):
        frames = W.draw_frames(np.full(4, time), np.array(vanish, np.float32), depth)
        return W.mosaic(frames[None])
    for last, passes in ((11.5, True), (11.25, False), (11.0, False), (10.8, False)):
        read = W.read_clips(clip([8.0, 9.5, 11.0, last]))
        assert np.allclose(read["vanish"], [[8.0, 9.5, 11.0, last]], atol=0.06)
        assert W.checks(read)["one bend"].tolist() == [passes], last
    assert W.checks(W.read_clips(clip([8.0, 6.5, 5.0, 4.5])))["one bend"].all()       # left


def test_the_closing_line_leaves_out_a_split_the_world_has_none_of():
    metrics = {"seen": 1.0, "level1": 0.5, "level2": float("nan")}
    assert runs.splits_line(metrics, W) == "seen 100.0 | level-1 50.0"
    assert runs.splits_line(dict(metrics, level2=0.25)) == ("seen 100.0 | level-1 50.0 | "
                                                            "level-2 25.0")
    assert not any(hasattr(world, "cra") for world in (data, shapes3d))


@pytest.mark.parametrize("script", ["dit.py", "maskgit.py"])
def test_a_tiny_run_in_the_clip_world_trains_reads_retrieves_and_draws(script, tmp_path,
                                                                        monkeypatch):
    """Small readers (3 real clips a class), a small reference and a small codebook keep this
    cheap; their caches are keyed by those sizes, so a real run never reads them."""
    monkeypatch.setattr(W, "PROBE_PER_CODE", 3)
    monkeypatch.setattr(W, "HELD_OUT_PER_CODE", 1)
    monkeypatch.setattr(W, "TOKENIZERS", {"codebook": dict(n_masks=32, n_colors=4, per_code=1)})
    out = tmp_path / "run"
    printed = scripts.main(script, *scripts.ONCE, "--world", "clips", "--samples-per-comp", "1",
                           "--train-per-comp", "2", "--out", out)
    assert json.load(open(out / "config.json"))["world"] == "clips"
    last = runs.read_metrics(out)[-1]
    assert set(last["acc"]) == set(W.COMPOSITIONS) and "substitution" in last
    assert set(last["cra"]["row"]) == set(W.COMPOSITIONS)
    assert all(sum(row.values()) == pytest.approx(1) for row in last["cra"]["row"].values())
    assert "night-straight" in printed and "level-1" in printed and "level-2" not in printed
    assert (out / "samples.png").exists()
    assert np.load(out / "samples.npz")["factors"].shape == (6, 2)


def test_the_judge_reads_clips_with_the_worlds_readings_and_the_probe(monkeypatch):
    monkeypatch.setattr(W, "PROBE_PER_CODE", 3)
    monkeypatch.setattr(W, "HELD_OUT_PER_CODE", 1)
    monkeypatch.setattr(judge, "_INSTRUMENTS", {})
    images, bits, _ = W.make_dataset(W.COMPOSITIONS, 2, seed=6)
    metrics = judge.evaluate(images, bits, W)
    assert metrics["seen"] == 1.0 and metrics["level1"] == 1.0 and np.isnan(metrics["level2"])
    assert set(metrics["cra"]["hit1"]) == set(W.COMPOSITIONS)
    assert set(metrics["probe_acc"]) == set(W.COMPOSITIONS)


# ------------------------------------------------------------- the renderer, as the module says
SKY_, HUE_ = np.array([0.50, 0.66, 0.88]), np.array([1.0, 0.94, 0.82])   # the module's colours


def _clip(night, vanish, depth, gain=1.0):
    """One clip (1, 32, 32, 3) drawn frame by frame: its time, its four vanishing points, stripe
    depths and gains (one for all four frames, or one a frame)."""
    frames = W.draw_frames(np.full(4, night), np.asarray(vanish, np.float32),
                           np.asarray(depth, np.float32))
    gain = np.broadcast_to(np.asarray(gain, np.float32), (4,))
    return W.mosaic(frames[None] * gain[None, :, None, None, None])


def _middle(cover, near, start=0):
    """The middle of a drawn band from its anti-aliased coverage (..., L) along the last axis (its
    pixel i spans start + i to start + i + 1): half its width past the integer edge k = round(near)
    less the coverage before k. Exact wherever the band straddles k, so, with near the band's
    true middle and a band over a pixel wide, a band drawn elsewhere reads elsewhere."""
    k = np.round(near).astype(int)
    before = np.array([c[:e - start].sum() for c, e in zip(cover.reshape(-1, cover.shape[-1]),
                                                             np.broadcast_to(k, cover.shape[:-1])
                                                             .ravel())]).reshape(cover.shape[:-1])
    return k + cover.sum(-1) / 2 - before


def test_the_sky_fills_4_rows_and_the_road_narrows_from_the_bottom_to_the_vanishing_point():
    """With the stripe out of sight (depth -1), rows 0-3 are the sky's colour and nothing else,
    and each row below, at depth z = (y - 4) / 12 of its centre y, holds road of width 1 + 9 z
    (half-width 0.5 + 4.5 z) centred on x0 + (8 - x0) z: at the vanishing point x0 on the
    horizon, in the middle at the bottom. The road's share of a pixel is read from the red
    channel (ground 0.70, road 0.30), by day and at night (0.3 of both) alike."""
    vanish = np.array([5.3, 8.0, 10.7], np.float32)
    z = (np.arange(4, 16) + 0.5 - 4) / 12
    for night, light in ((0, 1.0), (1, 0.3)):
        frames = W.draw_frames(np.full(3, night), vanish, np.full(3, -1.0))
        assert np.allclose(frames[:, :4], light * SKY_, atol=1e-6), night
        road = (light * 0.70 - frames[:, 4:, :, 0]) / (light * (0.70 - 0.30))      # (3, 12, 16)
        assert road.min() > -1e-5 and road.max() < 1 + 1e-5
        assert np.allclose(road.sum(-1), 1 + 9 * z, atol=1e-4), night
        centre = vanish[:, None] + (8 - vanish[:, None]) * z
        assert np.allclose(_middle(road, centre), centre, atol=1e-4), night


def test_the_stripe_comes_nearer_lower_and_thicker_as_its_depth_grows():
    """The stripe at depth d lies across the road at row 4 + 12 d (0 the horizon, 1 the bottom)
    and is 0.4 + 1.6 d rows thick: read in column 8, road from top to bottom when the vanishing
    point is at 8.5, from the red channel between the road's 0.30 and the paint's 0.88 (at night
    the road's 0.3 x 0.30 and the paint's 0.75 x 0.88)."""
    depth = np.array([0.25, 0.4, 0.55, 0.7], np.float32)
    for night, road, paint in ((0, 0.30, 0.88), (1, 0.3 * 0.30, 0.75 * 0.88)):
        frames = W.draw_frames(np.full(4, night), np.full(4, 8.5), depth)
        stripe = (frames[:, 4:, 8, 0] - road) / (paint - road)                       # (4, 12)
        assert stripe.min() > -1e-5 and stripe.max() < 1 + 1e-5
        assert np.allclose(stripe.sum(1), 0.4 + 1.6 * depth, atol=1e-4), night
        assert np.allclose(_middle(stripe, 4 + 12 * depth, 4), 4 + 12 * depth, atol=1e-4), night


def test_night_is_0_3_of_the_days_light_but_the_stripes_paint_0_75():
    """Without the stripe a night frame is the day's times 0.3, sky, ground and road; the stripe's
    paint, where it covers a pixel whole (row 12 of column 8 at depth 0.7), is 0.88 x the hue by
    day and 0.75 of that at night."""
    vanish = np.array([6.0, 8.5, 11.0], np.float32)
    day, night = (W.draw_frames(np.full(3, t), vanish, np.full(3, -1.0)) for t in (0, 1))
    assert np.allclose(night, 0.3 * day, atol=1e-6)
    day, night = (W.draw_frames(np.full(3, t), vanish, np.full(3, 0.7)) for t in (0, 1))
    assert np.allclose(day[1, 12, 8], 0.88 * HUE_, atol=1e-6)
    assert np.allclose(night[1, 12, 8], 0.75 * 0.88 * HUE_, atol=1e-6)
    assert np.allclose(night[:, :4], 0.3 * SKY_, atol=1e-6)
    assert np.allclose(night[:, 12, 0], 0.3 * 0.70 * HUE_, atol=1e-6)      # ground beside the road


def test_a_sub_pixel_move_of_the_vanishing_point_or_of_the_stripe_changes_the_picture():
    """Every edge is anti-aliased: a tenth of a pixel's move of the vanishing point, or a
    hundredth of the stripe's depth (an eighth of a row), changes the frame."""
    frames = W.draw_frames(np.zeros(3), np.array([8.0, 8.1, 8.0]), np.array([0.3, 0.3, 0.31]))
    assert np.abs(frames[1] - frames[0]).max() > 0.02                          # the road's edges
    assert np.abs(frames[2] - frames[0]).max() > 0.02                          # the stripe's


def test_render_draws_frame_t_at_x0_plus_lateral_t_and_depth_d0_plus_speed_t_times_the_gain():
    """Each clip's frame t (0-3) is draw_frames at the clip's time, vanishing point x0 + lateral
    t and stripe depth d0 + speed t, every frame times the clip's gain; the clips' times mixed,
    so that each frame takes its own clip's."""
    bits = np.array([[1, 0], [0, 2], [1, 1], [0, 0], [0, 1], [1, 2]])
    latents = W.sample_latents(bits, np.random.default_rng(7))
    frames = np.stack([[W.draw_frames([time], [x0 + lateral * t], [d0 + speed * t])[0] * gain
                        for t in range(4)]
                       for time, gain, lateral, x0, speed, d0 in latents.astype(np.float64)])
    assert np.allclose(W.render(latents), W.mosaic(frames), atol=1e-5)


def test_render_past_one_chunk_of_2048_clips_is_each_clip_rendered_alone():
    """render draws 2,048 clips at a time: 2,050 clips, two chunks, are the clips one by one."""
    latents = W.sample_latents(W.requests(342)[:2050], np.random.default_rng(9))
    images = W.render(latents)
    alone = np.concatenate([W.render(one[None]) for one in latents])
    assert images.shape == (2050, 32, 32, 3) and np.array_equal(images, alone)


def test_sample_latents_draws_each_latent_over_its_whole_range_for_its_class():
    """As the module's table says: the asked time; the gain 0.9-1.1; the lateral speed -1.7 to
    -1.2 (left), -0.12 to 0.12 (straight), 1.2 to 1.7 (right); the first vanishing point 7.5-8.5;
    the forward speed 0.13-0.17; the first depth 0.20-0.30; 300 clips a class fill each range to
    within 2% of both its ends."""
    bits = W.requests(300)
    latents = W.sample_latents(bits, np.random.default_rng(3))
    assert latents.shape == (1800, 6) and latents.dtype == np.float32
    assert np.array_equal(latents[:, 0], bits[:, 0])

    def fills(values, low, high):
        margin = 0.02 * (high - low)
        return (low - 1e-6 <= values.min() < low + margin
                and high - margin < values.max() <= high + 1e-6)
    for column, (low, high) in {1: (0.9, 1.1), 3: (7.5, 8.5), 4: (0.13, 0.17),
                                5: (0.20, 0.30)}.items():
        assert fills(latents[:, column], low, high), column
    for direction, (low, high) in enumerate(((-1.7, -1.2), (-0.12, 0.12), (1.2, 1.7))):
        assert fills(latents[bits[:, 1] == direction, 2], low, high), direction


def test_requests_names_and_splits_each_code_in_order():
    """requests(n): n of each class, in COMPOSITIONS' order; describe names each of the six; a
    code that is none of them is refused by split_of and describe."""
    assert W.requests(2).tolist() == [[0, 0], [0, 0], [0, 1], [0, 1], [0, 2], [0, 2],
                                      [1, 0], [1, 0], [1, 1], [1, 1], [1, 2], [1, 2]]
    assert [W.describe(c) for c in W.COMPOSITIONS] == [
        "day-left", "day-straight", "day-right", "night-left", "night-straight", "night-right"]
    for refused in (W.split_of, W.describe):
        with pytest.raises(ValueError, match="'20'"):
            refused("20")


def test_make_dataset_draws_n_of_each_asked_class_rendered_from_its_latents():
    """n clips of each asked class, each its latents' class and render; training_set the seen
    classes alone."""
    images, bits, latents = W.make_dataset(("02", "10"), 5, seed=2)
    assert sorted(W.bits_to_code(b) for b in bits) == ["02"] * 5 + ["10"] * 5
    assert np.array_equal(W.class_bits(latents).numpy(), bits)
    assert np.array_equal(images, W.render(latents))
    _, seen, _ = W.training_set(3, seed=1)
    assert sorted(W.bits_to_code(b) for b in seen) == sorted(list(W.SEEN) * 3)


# -------------------------------------------------------------------------- the conditioning
# a clip of each class in COMPOSITIONS' order, at chosen latents, and their condition by hand:
# (time - 0.5) / 0.5, (gain - 1) / 0.1, lateral / 1.45, (x0 - 8) / 0.5, (speed - 0.15) / 0.02,
# (depth - 0.25) / 0.05
SIX_LATENTS = np.array([[0, 1.05, -1.45, 8.25, 0.16, 0.20], [0, 0.95, 0.0, 7.75, 0.14, 0.30],
                        [0, 1.10, 1.7, 8.5, 0.17, 0.25], [1, 0.90, -1.2, 7.5, 0.13, 0.225],
                        [1, 1.0, 0.1, 8.0, 0.15, 0.275], [1, 1.02, 1.2, 8.1, 0.155, 0.21]],
                       np.float32)
SIX_CONDITIONS = np.array([[-1, 0.5, -1, 0.5, 0.5, -1], [-1, -0.5, 0, -0.5, -0.5, 1],
                           [-1, 1, 1.7 / 1.45, 1, 1, 0], [1, -1, -1.2 / 1.45, -1, -1, -0.5],
                           [1, 0, 0.1 / 1.45, 0, 0, 0.5], [1, 0.2, 1.2 / 1.45, 0.2, 0.25, -0.8]])


def test_the_condition_of_each_class_in_each_mode_is_its_latents_or_its_class():
    """continuous: the latents, centred and scaled as the table above; discrete (and
    discrete-dropout): the time, the middle gain (0) and the class's middle lateral speed (-1.45,
    0, 1.45: -1, 0, 1 scaled), the motion still in the values but marked absent; the dropout
    modes at evaluation hide nothing more. The caller's latents, an array or a tensor, are left
    as they were."""
    values, present = W.conditioning(SIX_LATENTS, "continuous")
    assert np.allclose(values.numpy(), SIX_CONDITIONS, atol=1e-5) and present.all()
    assert np.allclose(W.conditioning(SIX_LATENTS, "dropout", 0.5, train=False)[0].numpy(),
                       SIX_CONDITIONS, atol=1e-5)
    assert W.conditioning(SIX_LATENTS, "dropout", 0.5, train=False)[1].all()
    discrete = SIX_CONDITIONS.copy()
    discrete[:, 1], discrete[:, 2] = 0, [-1, 0, 1, -1, 0, 1]
    for mode in ("discrete", "discrete-dropout"):
        for latents in (SIX_LATENTS.copy(), torch.as_tensor(SIX_LATENTS).clone()):
            values, present = W.conditioning(latents, mode, 0.5, train=False)
            assert np.allclose(values.numpy(), discrete, atol=1e-5), mode
            assert present.tolist() == [[True, True, False]] * 6, mode
            assert np.array_equal(np.asarray(latents), SIX_LATENTS), mode


def test_dropout_hides_the_time_and_the_direction_each_with_its_own_draw_from_the_rng():
    """In training each clip's time and direction are hidden where the run's generator draws
    below drop_prob, one draw each (B, 2): so each is hidden 30% of the time and both 9%; the
    values stay as the mode gives them, the motion present (dropout) or not (discrete-dropout)."""
    latents = np.tile(SIX_LATENTS, (700, 1))                                     # 4,200 clips
    drawn = torch.rand(len(latents), 2, generator=torch.Generator().manual_seed(5)) < 0.3
    for mode, motion in (("dropout", True), ("discrete-dropout", False)):
        values, present = W.conditioning(latents, mode, 0.3, torch.Generator().manual_seed(5))
        assert torch.equal(present[:, :2], ~drawn), mode
        assert (present[:, 2] == motion).all(), mode
        assert torch.equal(values, W.conditioning(latents, mode.replace("-dropout", "")
                                                  .replace("dropout", "continuous"))[0]), mode
    hidden = (~present[:, :2]).float()
    assert abs(hidden[:, 0].mean() - 0.3) < 0.03 and abs(hidden[:, 1].mean() - 0.3) < 0.03
    assert abs(hidden.prod(1).mean() - 0.09) < 0.02


def test_class_bits_turns_just_beyond_0_6_px_a_frame_either_way():
    """Lateral speeds 0.01 px inside and outside +-0.6 read straight and turned; the time is the
    latent's, rounded."""
    latents = torch.zeros(7, 6)
    latents[:, 0] = torch.tensor([0, 1, 0, 1, 0, 1, 0])
    latents[:, 2] = torch.tensor([-0.61, -0.59, 0.59, 0.61, -1.7, 1.7, 0.0])
    assert W.class_bits(latents).tolist() == [[0, 0], [1, 1], [0, 1], [1, 2], [0, 0], [1, 2],
                                              [0, 1]]


# --------------------------------------------------------------- the readings, at each edge
ON_GRID = [0.24, 0.32, 0.40, 0.48]          # stripe depths on the fit's grid, 0.08 a frame


def test_the_fit_reads_the_renderers_own_frames_exactly():
    """Frames drawn at points of the fit's grid, at gains 0.8 and 1.2, by day and at night: the
    vanishing points (to 0.01 px: the misfit is a parabola only near its least), depths and gains
    read back as drawn, with no patch and no bad pixel."""
    vanish = [3.0, 5.5, 8.25, 12.0]
    for night in (0, 1):
        for gain in (0.8, 1.2):
            read = W.read_clips(_clip(night, vanish, ON_GRID, gain))
            assert np.allclose(read["vanish"], [vanish], atol=0.01), (night, gain)
            assert np.allclose(read["depth"], [ON_GRID], atol=1e-4), (night, gain)
            assert np.allclose(read["gain"], gain, atol=1e-4), (night, gain)
            assert read["patch"].max() < 1e-3 and read["bad"].tolist() == [0], (night, gain)
            assert (read["night"] == night).all() and read["bits"].tolist() == [[night, 2]]


def test_a_frame_is_day_above_a_mean_brightness_of_0_35_and_night_below():
    """Day frames dimmed, and night frames brightened, to means 0.36 and 0.34 read day and
    night."""
    for night in (0, 1):
        frames = W.draw_frames(np.full(4, night), np.full(4, 8.0), np.array(ON_GRID))
        means = frames.reshape(4, -1).mean(1)
        gain = np.array([0.36, 0.34, 0.34, 0.36]) / means
        read = W.read_clips(W.mosaic(frames[None] * gain[None, :, None, None, None]))
        assert read["night"].tolist() == [[False, True, True, False]], night


def test_lit_as_drawn_holds_each_frames_gain_within_0_75_to_1_25_and_within_0_12_of_the_others():
    """Clips whose four frames are at gains just inside and just outside the range, one frame
    outside, and one frame (any of them) 0.11 and 0.13 from the others, by day and at night."""
    cases = [((0.76,) * 4, True), ((0.74,) * 4, False), ((1.24,) * 4, True), ((1.26,) * 4, False),
             ((0.8, 0.8, 0.74, 0.8), False), ((1.2, 1.2, 1.26, 1.2), False),
             ((1.0, 1.0, 1.11, 1.0), True), ((1.0, 1.0, 1.13, 1.0), False),
             ((0.9, 1.01, 0.9, 0.9), True), ((0.9, 1.03, 0.9, 0.9), False),
             ((1.01, 0.9, 0.9, 0.9), True), ((1.03, 0.9, 0.9, 0.9), False)]
    for night in (0, 1):
        images = np.concatenate([_clip(night, [8.0, 9.5, 11.0, 12.5], ON_GRID, gain)
                                 for gain, _ in cases])
        read = W.read_clips(images)
        assert np.allclose(read["gain"], [gain for gain, _ in cases], atol=1e-4)
        assert W.checks(read)["lit as drawn"].tolist() == [ok for _, ok in cases], night


def test_no_patch_holds_each_4x4_tokens_mean_misfit_within_0_2_of_the_frames_light():
    """One 4x4 token of the ground lighter or darker than the renderer's by a share of the
    frame's light: its patch (what the fit leaves of it, a little less than the share) just
    under 0.2 passes, just over does not, by day and at night; the clip's other tokens fit."""
    for night, light in ((0, 1.0), (1, 0.3)):
        for share, low, high, ok in ((0.21, 0.18, 0.2, True), (0.235, 0.2, 0.22, False),
                                     (-0.2, 0.18, 0.2, True), (-0.225, 0.2, 0.22, False)):
            frames = W.frames_of(_clip(night, [8.0, 9.5, 11.0, 12.5], ON_GRID)).copy()
            frames[0, 1, 12:16, 0:4] += share * light
            read = W.read_clips(W.mosaic(frames))
            assert low < read["patch"][0, 1] < high and read["patch"][0, [0, 2, 3]].max() < 1e-3
            assert W.checks(read)["no patch"].tolist() == [ok], (night, share)


def test_no_stray_road_forgives_one_road_dark_pixel_on_the_ground_and_refuses_two():
    """Road-dark pixels on frame 2's ground, far from the road (row 14, from column 0), by day and
    at night: one is a speck and passes, two are refused, though their token's mean misfit stays
    well under max_patch; two just lighter than the midpoint between road and ground, two half a
    pixel or less from the road's edge, or two on the horizon's row, are not stray road."""
    vanish = [8.0, 9.5, 11.0, 12.5]                     # frame 2's road at row 14: x 3.7 to 12.6
    mid = (W.ROAD.mean() + W.GROUND.mean()) / 2
    for night, light in ((0, 1.0), (1, 0.3)):
        for rows, columns, shade, count in (([14], [0], 0.95, 1), ([14, 14], [0, 1], 0.95, 2),
                                            ([14, 14], [0, 1], 1.05, 0),
                                            ([14, 12], [3, 4], 0.95, 0),  # 0.25 px off
                                            ([4, 4], [0, 1], 0.95, 0), ([5, 5], [0, 1], 0.95, 2)):
            frames = W.frames_of(_clip(night, vanish, ON_GRID)).copy()
            frames[0, 1, rows, columns] = shade * mid * light
            read = W.read_clips(W.mosaic(frames))
            assert read["stray"][0].tolist() == [0, count, 0, 0], (night, rows, columns, shade)
            assert W.checks(read)["no stray road"].tolist() == [count <= 1], (night, count)
            assert read["patch"][0].max() < W.LEGIBLE["max_patch"], (night, rows, columns)


def test_no_stray_colour_forgives_one_pixel_of_a_colour_the_scene_lacks_and_refuses_two():
    """Pixels on frame 2's ground off the warm grey's line by 0.16 (a strange colour) or 0.14
    (within the 0.15 allowed), by day and at night: one strange pixel is a speck and passes, two
    are refused, though their token's mean misfit stays under max_patch and no road-dark pixel
    strays; pixels of the scene's own colours at another brightness (a lighter ground, a darker
    sky) are no strange colour, wherever they lie."""
    lines = [c / np.linalg.norm(c) for c in (W.HUE, np.asarray(W.SKY))]
    across = np.cross(*lines)
    across /= np.linalg.norm(across)                  # off the grey's line and off the sky's too
    for night, light in ((0, 1.0), (1, 0.3)):
        ground = W.GROUND * light
        for colour, count, strange in ((ground + 0.16 * across, 1, 1),
                                       (ground + 0.16 * across, 2, 2),
                                       (ground - 0.16 * across, 2, 2),
                                       (ground + 0.14 * across, 2, 0),
                                       (1.2 * ground, 2, 0),
                                       (0.9 * light * np.asarray(W.SKY), 2, 0)):
            gap = min(np.linalg.norm(colour - (colour @ line) * line) for line in lines)
            assert (gap > 0.15) == (strange > 0), (night, colour, gap)   # as the case says
            frames = W.frames_of(_clip(night, [8.0, 9.5, 11.0, 12.5], ON_GRID)).copy()
            frames[0, 1, 14, :count] = colour
            read = W.read_clips(W.mosaic(frames))
            assert read["off_colour"][0].tolist() == [0, strange, 0, 0], (night, colour, count)
            assert W.checks(read)["no stray colour"].tolist() == [strange <= 1], (night, count)
            assert read["patch"][0].max() < W.LEGIBLE["max_patch"], (night, colour)
            assert read["stray"][0].max() == 0, (night, colour)


def test_the_time_read_is_the_commonest_of_the_frames_and_the_direction_the_mean_steps():
    """Three frames of four decide the time, whichever the odd one; the direction is the mean
    step's beyond +-0.6 px a frame (0.55 straight, 0.65 a bend), not the first step's or the
    last's."""
    frames = {t: W.frames_of(_clip(t, [8.0, 9.5, 11.0, 12.5], ON_GRID))[0] for t in (0, 1)}
    times = [(0, 1, 1, 1), (1, 0, 0, 0), (1, 1, 1, 0), (0, 0, 0, 1)]
    images = W.mosaic(np.stack([[frames[t][k] for k, t in enumerate(each)] for each in times]))
    assert W.read_clips(images)["bits"][:, 0].tolist() == [1, 0, 1, 0]
    steps = [(0.55,) * 3, (0.65,) * 3, (-0.55,) * 3, (-0.65,) * 3, (-0.9, 0.3, 3.0),
             (1.6, 1.6, -1.0), (-1.6, -1.6, 1.0), (0.9, -0.3, -3.0)]
    for night in (0, 1):
        images = np.concatenate([_clip(night, 7.0 + np.cumsum([0, *s]), ON_GRID) for s in steps])
        read = W.read_clips(images)
        assert read["bits"][:, 1].tolist() == [1, 2, 1, 0, 2, 2, 0, 0], night
        assert W.legible(read)[:4].all(), night


def test_one_bend_holds_each_step_of_a_bend_its_way_by_0_4_and_of_a_straight_road_within_0_75():
    """A bend's three steps each at least 0.4 px its way (0.45 passes, 0.35 or a step back does
    not), left and right; a straight road's each within +-0.75 (0.7 passes, 0.8 either way does
    not), by day and at night."""
    cases = [((1.5, 1.5, 0.45), True), ((1.5, 1.5, 0.35), False), ((0.45, 1.5, 1.5), True),
             ((-1.5, -1.5, -0.45), True), ((-1.5, -1.5, -0.35), False),
             ((-1.5, -1.5, 0.5), False), ((1.5, 1.5, -0.5), False),
             ((0.7, -0.7, 0.7), True), ((-0.7, 0.7, -0.7), True), ((0.8, -0.8, 0.8), False),
             ((-0.8, 0.4, -0.1), False), ((0.8, -0.4, 0.1), False)]
    for night in (0, 1):
        images = np.concatenate([_clip(night, 8.0 + np.cumsum([0, *s]) - 1.5 * np.sign(sum(s)),
                                       ON_GRID) for s, _ in cases])
        read = W.read_clips(images)
        assert W.checks(read)["one bend"].tolist() == [ok for _, ok in cases], night


def test_nearing_holds_each_step_of_the_stripe_within_0_06_to_0_3_and_within_0_12_of_the_others():
    """The stripe's depth gained a frame: 0.08 a frame passes, 0.04 (in any step) or backwards
    does not; a step of 0.28 passes, 0.32 does not; steps 0.10 apart pass, 0.14 apart do not
    (depths on the fit's grid, read exactly), by day and at night."""
    cases = [((0.24, 0.32, 0.40, 0.48), True), ((0.24, 0.28, 0.32, 0.36), False),
             ((0.48, 0.40, 0.32, 0.24), False), ((0.24, 0.32, 0.36, 0.44), False),
             ((0.12, 0.40, 0.62, 0.84), True),
             ((0.12, 0.44, 0.66, 0.88), False), ((0.20, 0.28, 0.46, 0.54), True),
             ((0.20, 0.28, 0.50, 0.58), False)]
    for night in (0, 1):
        read = W.read_clips(np.concatenate([_clip(night, [8.0, 9.5, 11.0, 12.5], depth)
                                            for depth, _ in cases]))
        assert np.allclose(read["depth"], [depth for depth, _ in cases], atol=1e-4)
        assert W.checks(read)["nearing"].tolist() == [ok for _, ok in cases], night


def test_precise_is_composed_with_at_most_8_pixels_off_by_more_than_0_25():
    """A right bend read exactly, with pixels of the road lighter or darker in its own colour (the
    red channel off by as much, the others a little less): 8 off by 0.27 is precise, 9 is not; 9
    off by 0.23 are no bad pixel; a clip read as another class than asked is not precise however
    few its bad pixels."""
    clean = W.frames_of(_clip(0, [8.0, 9.5, 11.0, 12.5], ON_GRID))[0]
    places = [(k, 13 + i, 8) for i in range(3) for k in range(4)]      # the road, below the stripe

    def off(count, by):
        frames = clean.copy()
        for k, row, column in places[:count]:
            frames[k, row, column] += by * W.HUE
        return W.mosaic(frames[None])
    images = np.concatenate([off(8, 0.27), off(9, 0.27), off(9, 0.23), off(9, -0.27), off(0, 0)])
    asked = [[0, 2]] * 4 + [[0, 1]]
    judged = W.readings(images, asked)
    assert W.read_clips(images)["bad"].tolist() == [8, 9, 0, 9, 0]
    assert judged["composed"].tolist() == [True] * 4 + [False] and judged["legible"].all()
    assert judged["precise"].tolist() == [True, False, True, False, False]


def test_refined_vanish_step_is_the_parabolas_vertex_within_half_a_grid_step():
    """Misfits of a best template and of its neighbours in vanishing point (the same depth, a
    depth-row of the grid apart), all others 10: the vertex of the parabola through them, in
    pixels (a grid step 0.25 px), held within half a step; none where the misfit bends down or is
    flat, nor at either end of the grid."""
    stride, last = len(W.DEPTH_GRID), len(W.VANISH_GRID) - 1
    cases = [(20, (1.69, 0.09, 0.49), 0.3 * 0.25), (20, (0.64, 0.04, 1.44), -0.2 * 0.25),
             (20, (3.24, 0.64, 0.04), 0.125), (20, (0.04, 0.64, 3.24), -0.125),
             (20, (0.0, 1.0, 0.5), 0.0), (20, (0.5, 0.5, 0.5), 0.0),
             (0, (1.69, 0.09, 0.49), 0.0), (last, (1.69, 0.09, 0.49), 0.0)]
    error = torch.full((len(cases), len(W.VANISH_GRID) * stride), 10.0)
    best = torch.tensor([index * stride + 7 for index, _, _ in cases])
    for i, (index, (below, at, above), _) in enumerate(cases):
        for step, value in ((-1, below), (0, at), (1, above)):
            error[i, (best[i] + step * stride) % error.shape[1]] = value
    shift = W.refined_vanish_step(error, best)
    assert np.allclose(shift, [want for _, _, want in cases], atol=1e-6)


# ------------------------------------------------------------------------------------ CRA
def test_retrieval_searches_held_out_per_code_real_clips_of_every_class_from_the_reference_seed(
        monkeypatch):
    """Clips between the classes (any lateral speed from -1.7 to 1.7 px a frame, either time):
    each retrieves the class of its nearest clip, by a direct search, among HELD_OUT_PER_CODE (3)
    real clips of each of the six classes drawn from REFERENCE_SEED; a reference of another size
    searched before (2 a class) is not this one."""
    monkeypatch.setattr(W, "_REFERENCE", {})
    rng = np.random.default_rng(11)
    latents = W.sample_latents(rng.integers(0, 2, (40, 2)), rng)
    latents[:, 2] = rng.uniform(-1.7, 1.7, 40)
    images = W.render(latents)
    monkeypatch.setattr(W, "HELD_OUT_PER_CODE", 2)
    W.retrieve(images[:1])
    monkeypatch.setattr(W, "HELD_OUT_PER_CODE", 3)
    real, bits, _ = W.make_dataset(W.COMPOSITIONS, 3, W.REFERENCE_SEED)
    distance = ((W.features(images)[:, None] - W.features(real)[None]) ** 2).sum(-1)
    nearest = [W.bits_to_code(b) for b in bits[distance.argmin(1).numpy()]]
    assert len(set(nearest)) == 6
    assert W.retrieve(images).tolist() == nearest


def test_hit_refused_counts_a_hit_that_the_reading_reads_as_another_class(monkeypatch):
    """Clips asked as day-straight, drawn straight (0 px a frame) or turning slowly (+-0.65 px):
    all legible; two of the three slow turns land on day-straight but read as a bend, so they
    count in hit_refused (2 of 8), the third lands on day-right (no hit); the straight ones are
    hits the reading composes."""
    monkeypatch.setattr(W, "HELD_OUT_PER_CODE", 4)
    monkeypatch.setattr(W, "_REFERENCE", {})
    latents = W.sample_latents([[0, 1]] * 8, np.random.default_rng(3))
    latents[:, 2] = [0.0, 0.65, 0.0, -0.65, 0.0, 0.65, 0.0, 0.0]
    images, asked = W.render(latents), np.array([[0, 1]] * 8)
    judged = W.readings(images, asked)
    assert judged["legible"].all() and judged["composed"].sum() == 5
    found = W.cra(images, asked)
    assert W.retrieve(images).tolist() == ["01"] * 5 + ["02", "01", "01"]
    assert found["hit1"] == {"01": 7 / 8} and found["hit_refused"] == {"01": 2 / 8}


# ----------------------------------------------------------------------------- the command
def test_main_prints_each_calibration_kinds_share_and_cra_on_real_clips(monkeypatch, capsys):
    """Without --samples: a line per kind a person accepts (the share composed) and per kind a
    person refuses (the share not legible), as the readings give them on calibration_images(n),
    then CRA's Hit@1 of the clean renders, each class by name."""
    monkeypatch.setattr(W, "HELD_OUT_PER_CODE", 2)
    monkeypatch.setattr(W, "_REFERENCE", {})
    W.main(["--n", "12"])
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    accepted, rejected, asked = W.calibration_images(12)
    want = [f"accept {name} {100 * W.readings(images, asked)['composed'].mean():.1f}% composed"
            for name, images in accepted.items()]
    want += [f"reject {name} {100 * (1 - W.readings(images, asked)['legible'].mean()):.1f}% "
             "not legible" for name, images in rejected.items()]
    hit = W.cra(accepted["clean renders"], asked)["hit1"]
    want.append("CRA Hit@1 of real clips: " + ", ".join(f"{W.describe(c)} {100 * h:.1f}%"
                                                       for c, h in hit.items()))
    assert len(lines) == 17 and lines == want


def test_samples_flag_counts_a_legible_clip_of_another_class_as_not_composed(tmp_path, capsys):
    """A run's samples: 4 real clips of each class, one of day-left's drawn as night-left: day-left
    reads composed 75.0% and refused by no check (it is a clip, of another class); its time reads as
    asked in 75.0%, its direction in 100.0%."""
    asked = np.repeat([W.code_to_bits(c) for c in W.COMPOSITIONS], 4, 0)
    drawn = asked.copy()
    drawn[1] = [1, 0]
    images = W.render(W.sample_latents(drawn, np.random.default_rng(5)))
    np.savez(tmp_path / "samples.npz", images=(images * 255).round().astype(np.uint8),
             factors=asked)
    W.main(["--samples", str(tmp_path / "samples.npz")])
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    for code, line in zip(W.COMPOSITIONS, lines):
        assert line.startswith(f"{W.describe(code)} composed "
                               f"{'75.0' if code == '00' else '100.0'}%; refused: "), line
        assert line.count(" 0.0%") == len(W.checks(W.read_clips(images[:1]))), line  # each check
        assert line.endswith(f"read as asked: time {'75.0' if code == '00' else '100.0'}%, "
                             "direction 100.0%"), line


# ------------------------------------------------------------------------ the calibration
def test_each_calibration_kind_is_built_as_its_name_says():
    """From the clean renders: noisy, off by a normal noise of sigma 0.03 (clipped); blurred, half
    of them and half their 3x3 box mean within each frame (over the pixels inside it, at its
    edges); dimmed, 0.85 of them; still, frame 1 four times; backwards, the frames reversed;
    shuffled, the frames in another order, never their own; a frame dropped, one of frames 2-4
    black; a patch gone white, one 4x4 token below the sky at 0.9; its own sky, one token below
    the horizon replaced by the sky above it; blank, black; the slowest or fastest bend, steps at
    an end of the class's range; another bend mid-clip, a first step of the asked direction and a
    last of another; two times of day, frame 1 of the asked time and frame 4 of the other; a
    strange-coloured speck, one pixel of every frame below the horizon's row red, green or
    purple; a strange-coloured block, 2x2 such pixels of one colour in one frame."""
    accepted, rejected, asked = W.calibration_images(60, seed=3)
    clean = W.frames_of(accepted["clean renders"])
    noise = accepted["noisy (sigma 0.03)"] - accepted["clean renders"]
    assert abs(noise.mean()) < 5e-4 and 0.0295 < noise.std() < 0.0305
    padded = np.pad(clean, ((0, 0), (0, 0), (1, 1), (1, 1), (0, 0)), constant_values=np.nan)
    box = np.nanmean([padded[:, :, i:i + 16, j:j + 16] for i in range(3) for j in range(3)], 0)
    assert np.allclose(W.frames_of(accepted["blurred (half a 3x3 box)"]), 0.5 * clean + 0.5 * box,
                       atol=1e-6)
    assert np.allclose(accepted["dimmed to 85%"], 0.85 * accepted["clean renders"], atol=1e-6)
    assert np.array_equal(W.frames_of(rejected["still (frame 1 four times)"]),
                          np.repeat(clean[:, :1], 4, 1))
    assert np.array_equal(W.frames_of(rejected["backwards (frames reversed)"]), clean[:, ::-1])
    shuffled = W.frames_of(rejected["frames shuffled"])
    order = (shuffled[:, :, None] == clean[:, None]).all((3, 4, 5)).argmax(2)       # (n, 4)
    assert np.array_equal(np.take_along_axis(clean, order[..., None, None, None], 1), shuffled)
    assert (np.sort(order, 1) == np.arange(4)).all() and (order != np.arange(4)).any(1).all()
    black = (W.frames_of(rejected["a frame dropped (black)"]) == 0).all((2, 3, 4))  # (n, 4)
    assert (black.sum(1) == 1).all() and not black[:, 0].any()
    for name, other in (("a 4x4 patch gone white", 0.9), ("its own sky pasted below the horizon",
                                                          None)):
        changed = W.frames_of(rejected[name]) != clean
        tokens = changed.reshape(60, 4, 4, 4, 4, 4, 3).any((3, 5, 6))          # (n, frame, 4, 4)
        assert (tokens.sum((1, 2, 3)) == 1).all() and not tokens[:, :, 0].any(), name
        for i, k, row, column in zip(*np.nonzero(tokens)):
            block = W.frames_of(rejected[name])[i, k, 4 * row:4 * row + 4,
                                                4 * column:4 * column + 4]
            sky = clean[i, k, :4, 4 * column:4 * column + 4]
            assert np.array_equal(block, np.full_like(block, 0.9) if other else sky), name
    strange = {(0.9, 0.1, 0.1), (0.1, 0.8, 0.2), (0.6, 0.1, 0.8)}
    specked = W.frames_of(accepted["a strange-coloured speck a frame"])
    changed = (specked != clean).any(-1)                                       # (n, 4, 16, 16)
    assert (changed.sum((2, 3)) == 1).all() and (np.nonzero(changed)[2] > W.HORIZON).all()
    assert {tuple(c) for c in np.round(specked[changed].astype(float), 3)} <= strange
    blocked = W.frames_of(rejected["a strange-coloured 2x2 block"])
    for i in range(60):
        k, rows, columns = np.nonzero((blocked[i] != clean[i]).any(-1))
        assert len(set(k)) == 1 and rows.min() > W.HORIZON, i
        assert sorted(zip(rows, columns)) == [(r, c) for r in range(rows.min(), rows.min() + 2)
                                              for c in range(columns.min(), columns.min() + 2)], i
        colours = {tuple(c) for c in np.round(blocked[i, k, rows, columns].astype(float), 3)}
        assert len(colours) == 1 and colours <= strange, i
    assert not rejected["blank"].any()
    steps = np.diff(W.read_clips(accepted["the slowest or fastest bend"])["vanish"], axis=1)
    ends = W.LATERAL[asked[:, 1]]                                                  # (n, 2)
    assert (np.abs(steps.mean(1, keepdims=True) - ends).min(1) < 0.03).all()
    bent = np.diff(W.read_clips(rejected["bends another way mid-clip"])["vanish"], axis=1)
    direction = (bent > -0.6).astype(int) + (bent > 0.6)
    assert (direction[:, 0] == asked[:, 1]).all() and (direction[:, 2] != asked[:, 1]).all()
    night = W.read_clips(rejected["frames of two times of day"])["night"]
    assert (night[:, 0] == asked[:, 0]).all() and (night[:, 3] != asked[:, 0]).all()


def test_the_caches_key_follows_the_renderers_own_clips(monkeypatch):
    """DEFINITION keys the fitted probes and tokenizers: a change inside the drawing that no named
    constant holds (here every frame 1% darker) changes it and so the cache's file."""
    assert W.definition()[:-1] == W.DEFINITION
    before = data.cache_path("probe-study", (), W)
    real = W.draw_frames
    monkeypatch.setattr(W, "draw_frames", lambda *args: real(*args) * 0.99)
    assert data.cache_path("probe-study", (), W) != before
