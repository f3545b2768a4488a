"""Worlds as plug-ins: shapes3d.py (the study's many-valued world) honours data.py's interface,
its readings accept what a person accepts and refuse what a person refuses, and --world reaches
every generator. Shapes2D's numbers are held by test_record.py (its tiny runs repeat the record)."""
import json

import numpy as np
import pytest
import torch

import data
import probe
import runs
import scripts
import shapes3d
import tokenizers
import worlds

W = shapes3d


def test_the_splits_are_the_studys_super_groups():
    assert len(W.COMPOSITIONS) == 240 and len(set(W.COMPOSITIONS)) == 240
    assert (len(W.SEEN), len(W.LEVEL1), len(W.LEVEL2)) == (190, 44, 6)
    assert (len(W.GROUPS["group0"]), len(W.GROUPS["group1"])) == (84, 106)
    assert set(W.LEVEL2) == {f"{c}2{z}" for c in (7, 8, 9) for z in (6, 7)}  # big spheres
    assert "726" in W.LEVEL2 and "026" in W.LEVEL1 and "720" in W.LEVEL1 and "727" in W.LEVEL2
    assert "700" in W.GROUPS["group1"] and "000" in W.GROUPS["group0"] and "016" in W.SEEN
    assert W.describe("726") == "indigo sphere 6"
    with pytest.raises(ValueError, match="'7a6'"):
        W.code_to_bits("7a6")


def test_every_render_reads_back_as_its_code_by_class_bits_and_by_the_reading():
    images, bits, latents = W.make_dataset(W.COMPOSITIONS, 1, seed=3)
    assert np.array_equal(W.class_bits(torch.as_tensor(latents)).numpy(), bits)
    judged = W.readings(images, bits)
    assert judged["composed"].mean() >= 0.99 and judged["precise"].mean() >= 0.95
    assert np.array_equal(judged["read"], bits)


def test_the_calibration_rates_hold():
    accepted, rejected, asked = W.calibration_images(60, seed=5)
    for name, images in accepted.items():
        assert W.readings(images.astype(np.float32), asked)["composed"].mean() >= 0.95, name
    for name, images in rejected.items():
        assert (~W.readings(images.astype(np.float32), asked)["legible"]).mean() >= 0.95, name


def test_a_neighbour_hue_patch_is_refused_though_the_mean_colour_reads_right():
    accepted, rejected, asked = W.calibration_images(40, seed=2)
    patched = rejected["a patch of a neighbour hue"].astype(np.float32)
    solids = W.read_solids(patched)
    assert (solids["bits"][:, 0] == asked[:, 0]).mean() >= 0.9       # the mean hue is the asked
    assert not W.readings(patched, asked)["legible"].any()


def test_a_size_one_step_off_reads_as_that_size_not_the_asked_one():
    rng = np.random.default_rng(0)
    asked = np.array([[c, s, z] for c in (1, 8) for s in range(3) for z in range(7)])
    off = asked + [0, 0, 1]
    judged = W.readings(W.render(W.sample_latents(off, rng)), asked)
    assert not judged["composed"].any() and judged["legible"].all()
    assert np.array_equal(judged["read"], off)


def clean(shape, sizes, color=4):
    """Real renders of one hue and shape at these half-heights, centred."""
    sizes = np.asarray(sizes, np.float32)
    latents = np.stack([np.full(len(sizes), W.HUE_STEP * color), np.full(len(sizes), shape),
                        sizes, np.full(len(sizes), 16.0), np.full(len(sizes), 16.0)], 1)
    return W.render(latents.astype(np.float32))


@pytest.mark.parametrize("shape", [0, 1, 2])
def test_size_reads_as_the_nearest_class_on_either_side_of_the_midpoint(shape):
    """Classes are 1.2 px apart, the midpoint 0.6 above class k: 0.53 above reads k, 0.67 above
    reads k + 1, both legible (no band in between is refused: a person reads the nearer size).
    The fit's grid is 0.2 px (4.6, the midpoint, is on it), so telling these apart needs the fit
    read between its points: within 0.05 px."""
    below, above = W.SIZES[:-1] + 0.53, W.SIZES[:-1] + 0.67
    for sizes, expected in ((below, np.arange(7)), (above, np.arange(1, 8))):
        solids = W.read_solids(clean(shape, sizes))
        assert solids["bits"][:, 2].tolist() == expected.tolist(), (shape, sizes)
        assert np.abs(solids["fit"][:, 1] - sizes).max() < 0.05
        assert W.legible(solids).all()


def test_the_largest_and_smallest_sizes_are_open_by_max_beyond_and_no_further():
    """Size is ordinal: a solid a little past size 7 is still "the big one" to a person, and past
    size 0 "the small one"; max_beyond (set by the labels) bounds how far. The fits reach well
    beyond that bound, so a giant solid is read as giant, not as the grid's end."""
    bound = W.LEGIBLE["max_beyond"]
    for shape in range(3):
        top = W.SIZES[-1] + np.array([bound - 0.2, bound + 0.2, 2.0])
        solids = W.read_solids(clean(shape, top))
        assert solids["bits"][:, 2].tolist() == [7, 7, 7]
        assert W.legible(solids).tolist() == [True, False, False], shape
        assert abs(solids["fit"][2, 1] - top[2]) < 0.15                 # 14.4 px, read as such
        bottom = W.SIZES[0] - np.array([bound - 0.2, bound + 0.15])
        solids = W.read_solids(clean(shape, bottom))
        assert solids["bits"][:, 2].tolist() == [0, 0]
        assert W.legible(solids).tolist() == [True, False], shape


def test_refined_size_step_is_the_vertex_of_the_parabola_through_three_sizes():
    """Against a direct computation: misfits e(s) = (s - s0)^2 on the grid's sizes at one shape
    and centre put the vertex at s0; the step is that less the grid's size, within half a step;
    none at the grid's ends."""
    found = W.templates()["latents"]
    stride = len(W.FIT_CENTRES) ** 2
    for s0, at in ((8.13, 8.2), (8.27, 8.2), (5.0, 5.0)):
        error = torch.full((1, len(found)), 100.0)
        for k, size in enumerate(W.FIT_SIZES):
            error[0, k * stride + 40] = (size - s0) ** 2          # shape 0, one centre, each size
        best = error.argmin(1)
        assert found[best.item(), 1] == pytest.approx(at)
        assert W.refined_size_step(error, best)[0] == pytest.approx(s0 - at, abs=1e-4)
    error = torch.full((1, len(found)), 100.0)
    error[0, 40], error[0, 40 + stride] = 0.0, 1.0      # the grid's smallest size, then the next
    assert W.refined_size_step(error, torch.tensor([40]))[0] == 0.0


def test_shapes_are_told_apart_at_every_size():
    rng = np.random.default_rng(1)
    bits = np.array([[c, s, z] for c in range(10) for s in range(3) for z in range(8)])
    read = W.read_solids(W.render(W.sample_latents(bits, rng)))["bits"]
    assert np.array_equal(read[:, 1], bits[:, 1])


def test_the_condition_gives_the_hue_on_a_circle_and_hides_what_a_mode_hides():
    latents = torch.tensor([[358.0, 2, 12.3, 16.5, 15.0], [2.0, 0, 4.1, 15.0, 17.0]])
    values, present = W.conditioning(latents, "continuous")
    assert torch.allclose(values[0, :2], values[1, :2], atol=0.08)        # 358 and 2 are near
    assert values[0, 2:5].tolist() == [0, 0, 1] and present.all()
    exact, _ = W.conditioning(latents, "discrete")
    assert torch.allclose(exact[:, :2], torch.tensor([[1.0, 0.0], [1.0, 0.0]]), atol=1e-6)
    assert exact[0, 5] == pytest.approx((W.SIZES[7] - 8.2) / 4.2)
    _, hidden = W.conditioning(latents, "discrete")
    assert hidden[:, 3].eq(False).all() and hidden[:, :3].all()
    many = torch.as_tensor(W.sample_latents(np.zeros((4000, 3), np.int64),
                                            np.random.default_rng(0)))
    one = W.conditioning(many, "dropout", 0.3, torch.Generator().manual_seed(4))[1]
    two = W.conditioning(many, "dropout", 0.3, torch.Generator().manual_seed(4))[1]
    assert torch.equal(one, two) and abs((~one[:, :3]).float().mean() - 0.3) < 0.03
    with pytest.raises(ValueError, match="text"):
        W.conditioning(latents, "text")


def test_requests_ask_every_novel_code_n_times_and_every_seen_code_an_eighth():
    bits = W.requests(8)
    codes = [W.bits_to_code(b) for b in bits]
    assert len(codes) == 50 * 8 + 190 and set(codes) == set(W.COMPOSITIONS)
    assert codes.count("726") == 8 and codes.count("000") == 1
    assert W.requests(16).shape == (50 * 16 + 190 * 2, 3)


@pytest.mark.parametrize("kind", ["fixed", "fresh"])
def test_training_data_of_a_world_holds_its_seen_codes_only(kind):
    training = data.TrainingData(kind, 2, "continuous", 0.1, lambda x: x, world=W)
    images, values, _ = training.batch(400, torch.Generator().manual_seed(0))
    read = W.read_solids(np.asarray(images))["bits"]
    assert {W.bits_to_code(b) for b in read} <= set(W.SEEN)
    assert len({W.bits_to_code(b) for b in read}) > 100 and values.shape == (400, 8)


def test_the_codebook_of_a_world_fits_its_seen_images_and_keeps_its_hues(monkeypatch):
    asked = []
    original = W.make_dataset
    monkeypatch.setattr(W, "make_dataset", lambda codes, n, seed: asked.extend(codes)
                        or original(codes, n, seed))
    codebook = tokenizers.Codebook(n_masks=64, n_colors=10, normalize=True, per_code=2, world=W)
    assert asked and set(asked) <= set(W.SEEN)
    images, bits, _ = original(W.LEVEL2, 4, seed=9)
    round_trip = codebook.decode(codebook.encode(images))
    assert (W.read_solids(round_trip)["bits"][:, 0] == bits[:, 0]).mean() >= 0.9   # hue kept


def test_the_probe_heads_have_one_logit_a_value_and_the_loss_is_the_mean_per_factor():
    torch.manual_seed(0)
    linear = probe.LinearProbe(dim=12, classes=(10, 3, 8))
    inputs, targets = torch.randn(5, 12), torch.tensor([[9, 2, 7], [0, 0, 0], [3, 1, 4],
                                                        [7, 2, 6], [1, 0, 5]])
    logits = linear(inputs)
    assert logits.shape == (5, 3, 10) and torch.isinf(logits[:, 1, 3:]).all()
    parts = linear.heads(inputs).split((10, 3, 8), 1)
    direct = sum(torch.nn.functional.cross_entropy(p, targets[:, f]) for f, p in
                 enumerate(parts)) / 3
    assert probe.factor_loss(linear, inputs, targets).item() == pytest.approx(direct.item(),
                                                                               rel=1e-6)


def test_common_world_is_recorded_sets_its_defaults_and_refuses_a_mode_it_lacks(tmp_path, capsys):
    import dit
    config = dit.get_config(["--world", "shapes3d", "--out", str(tmp_path / "a"), "--steps", "4",
                             "--eval-every", "4"])
    assert json.load(open(tmp_path / "a" / "config.json"))["world"] == "shapes3d"
    assert config["train_per_comp"] == 100 and config["samples_per_comp"] == 8
    given = dit.get_config(["--world", "shapes3d", "--samples-per-comp", "3", "--out",
                            str(tmp_path / "b")])
    assert given["samples_per_comp"] == 3
    assert dit.get_config(["--out", str(tmp_path / "c")])["world"] == "shapes2d"
    code, said = scripts.refused(dit, ["--world", "shapes3d", "--cond", "text", "--out",
                                       str(tmp_path / "d")], capsys)
    assert code == 2 and "--cond text" in said and "continuous" in said
    code, said = scripts.refused(dit, ["--world", "shapes9d", "--out", str(tmp_path / "e")],
                                 capsys)
    assert code == 2 and "shapes9d" in said and "shapes3d" in said


def test_every_world_names_the_whole_interface():
    names = ("NAME IMAGE_SIZE FACTORS VALUES COMPOSITIONS SPLITS SEEN code_to_bits bits_to_code "
             "split_of describe sample_latents render make_dataset training_set requests "
             "COND_MODES COND_GROUPS class_bits conditioning RUN_DEFAULTS TOKENIZERS "
             "PROBE_PER_CODE HELD_OUT_PER_CODE DEFINITION").split()
    for name, world in worlds.WORLDS.items():
        assert world.NAME == name and not [n for n in names if not hasattr(world, n)], name
        assert world.COND_GROUPS[-1][2] == len(world.conditioning(
            world.sample_latents(world.requests(1)[:2], np.random.default_rng(0)),
            "continuous")[0][0])
    assert not hasattr(data, "readings") and hasattr(shapes3d, "readings")


@pytest.mark.parametrize("script", ["dit.py", "maskgit.py"])
def test_a_tiny_run_in_the_many_valued_world_trains_reads_and_draws(script, tmp_path, monkeypatch):
    """Small readers (3 real images a code) and a small codebook keep this cheap; their caches are
    keyed by those sizes, so a real run never reads them."""
    monkeypatch.setattr(W, "PROBE_PER_CODE", 3)
    monkeypatch.setattr(W, "HELD_OUT_PER_CODE", 1)
    monkeypatch.setattr(W, "TOKENIZERS", {"codebook": dict(n_masks=32, n_colors=10,
                                                           normalize=True, per_code=1)})
    out = tmp_path / "run"
    printed = scripts.main(script, *scripts.ONCE, "--world", "shapes3d", "--samples-per-comp",
                           "1", "--train-per-comp", "2", "--out", out)
    last = runs.read_metrics(out)[-1]
    assert set(last["acc"]) == set(W.COMPOSITIONS) and "substitution" in last
    assert "level2" in printed and (out / "samples.png").exists()
    assert np.load(out / "samples.npz")["factors"].shape == (240, 3)


def test_a_substitution_counts_each_wrong_factor_of_a_legible_sample_as_the_value_read():
    import judge
    factors = np.array([[8, 2, 6], [8, 2, 6], [8, 2, 6], [9, 2, 7]])
    judged = {"legible": np.array([True, True, False, True]),
              "composed": np.array([False, True, False, False]),
              "read": np.array([[6, 1, 6], [8, 2, 6], [0, 0, 0], [9, 2, 6]])}
    codes = np.array([W.bits_to_code(f) for f in factors])
    assert judge.substitutions(judged, factors, codes, W) == {
        "826": {"color=blue": 1, "shape=cylinder": 1}, "927": {"size=6": 1}}


# --------------------------------------------------------- --seen-count: narrower seen sets
def test_seen_sets_are_nested_and_show_every_value_beside_group_0_from_the_smallest_on():
    assert sorted(W.seen_order()) == sorted(W.SEEN)
    for small, big in ((10, 12), (12, 24), (24, 48), (48, 95), (95, 190)):
        assert set(W.narrowed(small).SEEN) < set(W.narrowed(big).SEEN)
    for n in (10, 11, 12, 24, 48, 95, 190):
        seen = W.narrowed(n).SEEN
        assert len(seen) == n and list(seen) == [c for c in W.SEEN if c in seen]
        shown = np.array([W.code_to_bits(c) for c in seen])
        assert all(set(shown[:, f]) == set(range(len(v))) for f, v in enumerate(W.VALUES)), n
        for f, group in enumerate(W.GROUP1):
            for value in group:
                beside = [b for b in shown if b[f] == value]
                assert beside and all(W.group1_count(W.bits_to_code(b)) == 1 for b in beside)
    with pytest.raises(ValueError, match="--seen-count 9 .*10-190"):
        W.narrowed(9)


def test_seen_sets_grow_by_the_values_shown_least():
    """Each value is seen in about as many combinations as any other of its factor, until super
    group 1's run out (each of its colours has 12 seen codes)."""
    order = W.seen_order()
    for n in (12, 24, 48, 95):
        for f, values in enumerate(W.VALUES):
            counts = np.bincount([W.code_to_bits(c)[f] for c in order[:n]],
                                 minlength=len(values))
            assert counts.max() - counts.min() <= 2, (n, f, counts)


@pytest.mark.parametrize("kind", ["fixed", "fresh"])
def test_a_narrowed_world_keeps_the_test_set_and_the_images_and_learns_its_codes_only(kind):
    narrow = W.narrowed(24)
    assert narrow.SPLITS == W.SPLITS and np.array_equal(narrow.requests(8), W.requests(8))
    assert abs(narrow.RUN_DEFAULTS["train_per_comp"] * 24 - 100 * 190) <= 12
    assert abs(narrow.TOKENIZERS["codebook"]["per_code"] * 24 - 20 * 190) <= 12
    assert W.narrowed(190).SEEN == W.SEEN and W.narrowed(190).RUN_DEFAULTS == W.RUN_DEFAULTS
    assert W.SEEN == tuple(c for c in W.COMPOSITIONS if W.group1_count(c) <= 1)   # untouched
    training = data.TrainingData(kind, 3, "continuous", 0.1, lambda x: x, world=narrow)
    images, _, _ = training.batch(200, torch.Generator().manual_seed(0))
    read = {W.bits_to_code(b) for b in W.read_solids(np.asarray(images))["bits"]}
    assert read == set(narrow.SEEN)


def test_a_narrowed_world_refits_its_codebook_and_shares_the_readers_fitted_on_every_code(
        monkeypatch):
    class Reached(Exception):
        pass

    def where(kind, settings, world):                    # the tokenizer's file, then stop
        raise Reached(real(kind, settings, world))
    real, narrow = data.cache_path, W.narrowed(24)
    monkeypatch.setattr(data, "cache_path", where)
    codebooks = set()
    for world in (narrow, W, W.narrowed(190)):
        with pytest.raises(Reached) as reached:
            tokenizers.load_tokenizer("codebook", world, per_code=20)       # the same settings
        codebooks.add(str(reached.value))
    assert len(codebooks) == 2                                   # 24 codes; 190 codes twice
    assert real("probe-study", (), narrow) == real("probe-study", (), W)


def test_common_seen_count_is_recorded_sizes_the_training_set_and_is_refused_where_it_cannot_be(
        tmp_path, capsys):
    import dit
    config = dit.get_config(["--world", "shapes3d", "--seen-count", "24", "--out",
                             str(tmp_path / "a")])
    assert json.load(open(tmp_path / "a" / "config.json"))["seen_count"] == 24
    assert config["train_per_comp"] == 792 and config["batch_size"] == dit.DEFAULTS["batch_size"]
    assert worlds.world(config).SEEN == W.narrowed(24).SEEN
    assert dit.get_config(["--world", "shapes3d", "--out", str(tmp_path / "b")])[
        "seen_count"] is None
    code, said = scripts.refused(dit, ["--seen-count", "24", "--out", str(tmp_path / "c")],
                                 capsys)
    assert code == 2 and "--seen-count 24" in said and "shapes2d" in said
    code, said = scripts.refused(dit, ["--world", "shapes3d", "--seen-count", "200", "--out",
                                       str(tmp_path / "d")], capsys)
    assert code == 2 and "--seen-count 200" in said


def test_the_reach_of_a_narrower_seen_set_misses_more_of_level_2s_codebook_ids(monkeypatch):
    """tools/world.py --world shapes3d: each seen set's own codebook and training tokens; fewer
    seen codes leave more of the novel renders' ids untrained (small codebooks keep this cheap)."""
    import importlib.util
    import os
    spec = importlib.util.spec_from_file_location("world_tool", os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "world.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    monkeypatch.setattr(W, "_NARROWED", {})
    monkeypatch.setattr(W, "TRAINING_IMAGES", 760)
    monkeypatch.setattr(W, "RUN_DEFAULTS", dict(W.RUN_DEFAULTS, train_per_comp=4))
    monkeypatch.setattr(W, "HELD_OUT_PER_CODE", 2)
    monkeypatch.setattr(W, "TOKENIZERS", {"codebook": dict(n_masks=48, n_colors=10,
                                                           normalize=True, per_code=1)})
    shares = tool.seen_reach((12, 190))
    assert set(shares) == {12, 190} and set(shares[12]) == {"level1", "level2"}
    assert shares[12]["level2"][1] > shares[190]["level2"][1] >= 0
    assert shares[12]["level1"][1] > shares[190]["level1"][1]


@pytest.mark.parametrize("name", ["shapes3d", "clips"])
def test_a_worlds_grid_puts_each_code_in_its_cell_framed_by_its_split_and_names_its_splits(
        name, monkeypatch):
    """runs.save_grid_png: the cell of a code (rows every factor but the last, columns the last)
    holds its image in a frame of its split's colour; the legend names only splits the world has."""
    world = worlds.world(name)
    shown = {}

    class Recorder:
        def __getattr__(self, attribute):
            return lambda *args, **kwargs: shown.setdefault(attribute, args)
    monkeypatch.setattr(runs, "pyplot", lambda: type("plt", (), {
        "figure": staticmethod(lambda **kwargs: Recorder()),
        "close": staticmethod(lambda fig: None)}))
    monkeypatch.setattr(Recorder, "add_axes", lambda self, box: self, raising=False)
    bits = np.array([world.code_to_bits(c) for c in world.COMPOSITIONS])
    images = (np.arange(len(bits), dtype=np.uint8)[:, None, None, None]
              * np.ones((1, 32, 32, 3), np.uint8))
    runs.save_grid_png("unused.png", images, bits, "a run", world)
    mosaic, columns, cell = shown["imshow"][0], len(world.VALUES[-1]), world.IMAGE_SIZE + 4
    code = world.LEVEL1[-1]
    index = world.COMPOSITIONS.index(code)
    row, column = divmod(index, columns)                  # COMPOSITIONS run in code order
    assert (mosaic[row * cell + 2:row * cell + 34, column * cell + 2:column * cell + 34]
            == index).all()
    assert tuple(mosaic[row * cell, column * cell]) == (255, 105, 180)       # level-1: hot pink
    legend = shown["suptitle"][0]
    assert ("super group" in legend) == (name == "shapes3d")
    assert ("level-2" in legend) == bool(world.LEVEL2)
