"""The clip world (clips.py): the study's Table 12 split in time. Its interface, a first frame that
does not tell the direction, readers that accept real clips and refuse each kind of clip built
wrong on purpose, CRA against a direct computation, and --world clips through dit and maskgit."""
import json

import numpy as np
import pytest
import torch

import clips
import data
import judge
import runs
import scripts
import shapes3d
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
    for name, check in (("a 4x4 patch gone white", "no patch"), ("blank", "lit as drawn")):
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
