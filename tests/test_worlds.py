"""Worlds as plug-ins: shapes3d.py (the study's many-valued world) honours data.py's interface,
its readings accept what a person accepts and refuse what a person refuses, and --world reaches
every generator. Shapes2D's numbers are held by test_record.py (its tiny runs repeat the record)."""
import colorsys
import json
import re
from collections import Counter

import numpy as np
import pytest
import torch

import data
import probe
import runs
import scripts
from worlds import shapes3d
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


# ------------------------------------------------- shapes3d's codes, splits and requests
@pytest.mark.parametrize("bad", ["930", "008", "00", "0000", "7a6", 726])
def test_every_function_of_a_code_refuses_one_that_is_not_of_the_240_and_names_it(bad):
    """code_to_bits, group1_count, split_of and describe each refuse what is not one of the 240
    codes (a shape past 2, a size past 7, too few or too many digits, a letter, a number where a
    string belongs) with a ValueError that names it as given."""
    for function in (W.code_to_bits, W.group1_count, W.split_of, W.describe):
        with pytest.raises(ValueError, match=re.escape(repr(bad))):
            function(bad)


def test_a_codes_bits_count_split_and_name_follow_from_its_three_values():
    """For every code: bits_to_code inverts code_to_bits whatever number type the values come in;
    k counts the values of super group 1 (colours 7-9, the sphere, sizes 6-7) and the split follows
    k; describe names the colour, the shape and the size, in the module docstring's order."""
    for code in W.COMPOSITIONS:
        bits = W.code_to_bits(code)
        assert W.bits_to_code(bits) == code and W.bits_to_code(torch.tensor(bits)) == code
        assert W.bits_to_code(np.array(bits, np.float32)) == code
        k = int(bits[0] >= 7) + int(bits[1] == 2) + int(bits[2] >= 6)
        assert W.group1_count(code) == k, code
        assert W.split_of(code) == ("seen" if k <= 1 else f"level{k - 1}"), code
    colours = ["red", "orange", "yellow", "lime green", "green", "cyan", "blue", "indigo",
               "purple", "pink"]
    assert [W.describe(f"{c}00") for c in range(10)] == [f"{name} cube 0" for name in colours]
    assert W.describe("417") == "green cylinder 7" and W.describe("925") == "pink sphere 5"


def test_requests_ask_novel_codes_n_times_and_seen_codes_an_eighth_but_at_least_once():
    """requests(n), for n on either side of a multiple of 8: every novel code n times, every seen
    code n // 8 times but never less than once, in the order of COMPOSITIONS."""
    for n in (1, 4, 7, 8, 9, 16, 17):
        codes = [W.bits_to_code(b) for b in W.requests(n)]
        assert Counter(codes) == {c: n if W.split_of(c) != "seen" else max(1, n // 8)
                                  for c in W.COMPOSITIONS}, n
        assert codes == sorted(codes, key=W.COMPOSITIONS.index)


def test_a_seen_count_past_either_end_is_refused_by_name_and_another_seed_orders_otherwise():
    """--seen-count runs from 10 to 190 (both ends taken: the nested sets' test asks for both);
    9, 191 and 240 are refused, the error naming the count. seen_order's ties are a draw of its
    seed: another seed orders the 190 codes otherwise, every value still shown by the tenth code."""
    for count in (9, 191, 240):
        with pytest.raises(ValueError, match=f"--seen-count {count} "):
            W.narrowed(count)
    other = W.seen_order(1)
    assert sorted(other) == sorted(W.SEEN) and other != W.seen_order(0)
    shown = np.array([W.code_to_bits(c) for c in other[:10]])
    assert all(set(shown[:, f]) == set(range(len(v))) for f, v in enumerate(W.VALUES))


def test_make_dataset_shuffles_n_images_of_each_code_rendered_from_their_latents_by_its_seed():
    """make_dataset: each code n times, shuffled (the first 44 images hold many codes, not code
    after code), the latents those of the asked values and the images their renders; the same seed
    draws the same set, another another. training_set draws each seen code n times, no other."""
    images, bits, latents = W.make_dataset(W.LEVEL1, 3, seed=4)
    codes = [W.bits_to_code(b) for b in bits]
    assert Counter(codes) == {c: 3 for c in W.LEVEL1} and len(set(codes[:44])) > 25
    assert np.array_equal(W.class_bits(latents).numpy(), bits)
    assert np.array_equal(images, W.render(latents))
    again = W.make_dataset(W.LEVEL1, 3, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(again, (images, bits, latents)))
    assert not np.array_equal(W.make_dataset(W.LEVEL1, 3, seed=5)[2], latents)
    _, seen, _ = W.training_set(2, seed=1)
    assert Counter(W.bits_to_code(b) for b in seen) == {c: 2 for c in W.SEEN}


# ------------------------------------------------------------ shapes3d's renderer
def test_hue_rgb_is_the_fully_saturated_full_value_colour_of_every_class_hue():
    """hue_rgb is HSV with S = V = 1 (colorsys) at each of the 10 class hues and at hues all
    round the circle and past 360: red (1, 0, 0), 60 yellow, 120 green, 180 cyan, 240 blue, 300
    magenta."""
    classes = W.HUE_STEP * np.arange(10)
    direct = np.array([colorsys.hsv_to_rgb(h / 360, 1, 1) for h in classes])
    assert np.allclose(W.hue_rgb(classes), direct, atol=1e-12)
    named = {0: (1, 0, 0), 60: (1, 1, 0), 120: (0, 1, 0), 180: (0, 1, 1), 240: (0, 0, 1),
             300: (1, 0, 1), 360: (1, 0, 0), 480: (0, 1, 0)}
    assert np.allclose(W.hue_rgb(np.array(list(named), float)), list(named.values()), atol=1e-12)
    hues = np.random.default_rng(0).uniform(0, 720, 500)
    direct = np.array([colorsys.hsv_to_rgb(h % 360 / 360, 1, 1) for h in hues])
    assert np.allclose(W.hue_rgb(hues), direct, atol=1e-9)


def test_sample_latents_draw_each_factor_uniformly_within_its_jitter_of_the_class_value():
    """Latents of every code: the hue within +-5 degrees of the class hue on the circle and in
    [0, 360), the half-height within +-0.25 of the class's, the centre within +-1 of (16, 16) each
    way, x and y drawn apart; each reaching its jitter's ends, uniform (mean |offset| half the
    jitter); the shape the asked one; one code (3,) gives one row; the rng decides the draw."""
    bits = np.repeat(np.array([W.code_to_bits(c) for c in W.COMPOSITIONS]), 20, 0)
    latents = W.sample_latents(bits, np.random.default_rng(0))
    assert latents.shape == (4800, 5) and latents.dtype == np.float32
    hue = (latents[:, 0] - W.HUE_STEP * bits[:, 0] + 180) % 360 - 180
    size = latents[:, 2] - W.SIZES[bits[:, 2]]
    centre = latents[:, 3:5] - 16
    for offset, jitter in ((hue, 5.0), (size, 0.25), (centre[:, 0], 1.0), (centre[:, 1], 1.0)):
        assert np.abs(offset).max() <= jitter * 1.0001, jitter
        assert offset.min() < -0.97 * jitter and offset.max() > 0.97 * jitter, jitter
        assert abs(np.abs(offset).mean() - jitter / 2) < 0.05 * jitter, jitter
    assert ((latents[:, 0] >= 0) & (latents[:, 0] < 360)).all()
    assert np.array_equal(latents[:, 1], bits[:, 1])
    assert abs(np.corrcoef(centre.T)[0, 1]) < 0.05
    assert W.sample_latents([7, 2, 6], np.random.default_rng(3)).shape == (1, 5)
    assert np.array_equal(W.sample_latents(bits, np.random.default_rng(0)), latents)


def test_polygon_and_ellipse_give_the_signed_distance_in_pixels_negative_inside():
    """_polygon: the largest distance past any edge of a convex polygon whose corners run
    clockwise on screen (y down): a 4x4 square and a right triangle. _ellipse: exact on the axes
    of an ellipse 4 x 2."""
    def polygon(corners, points):
        x, y = (np.array(points, np.float32).T[:, None, None, :])
        return W._polygon(x, y, np.array([corners], np.float32))[0, 0]
    square = [(0, 0), (4, 0), (4, 4), (0, 4)]
    assert np.allclose(polygon(square, [(2, 2), (1, 2), (5, 2), (2, -1), (6, 7), (2, 3.5)]),
                       [-2, -1, 1, 1, 3, -0.5], atol=1e-6)
    triangle = [(0, 0), (4, 0), (0, 4)]
    assert np.allclose(polygon(triangle, [(4, 4), (1, 1), (-1, 2)]),
                       [2 * np.sqrt(2), -1, 1], atol=1e-5)
    x = np.array([[[6, -6, 0, 0, 2, 0, -3]]], np.float32)
    y = np.array([[[0, 0, 3, -1, 0, -2.5, 0]]], np.float32)
    assert np.allclose(W._ellipse(x, y, np.array([4.0]), np.array([2.0]))[0, 0],
                       [2, 2, 1, -1, -2, 0.5, -1], atol=1e-5)


@pytest.mark.parametrize("shape", [0, 1, 2])
def test_the_half_height_sets_each_solids_extent_and_the_centre_moves_it(shape):
    """Each solid spans 2 s from top to bottom (the cube's a + d, the cylinder's ends, the
    sphere's diameter) and 2 s across (the cylinder 1.6 s: its radius is 0.8 s), the edges soft
    over one pixel: through the middle, the rows and columns drawn at all are exactly those whose
    centres lie within s + 0.5 of the solid's centre. At s = 5.25 and 10.25 the edges fall a
    quarter pixel past a pixel centre, at 5.75 and 9.75 a quarter pixel short of one, so an edge a
    quarter pixel off either way shows. A centre moved by (3, -2) moves the picture 3 columns
    right and 2 rows up."""
    for s in (5.25, 5.75, 9.75, 10.25):
        grey = W.shade_maps([shape], [s], [16.0], [16.0])[0]
        half = 0.8 * s if shape == 1 else s
        rows, columns = grey[:, 15:17].max(1), grey[15:17].max(0)         # through the middle
        assert np.nonzero(rows)[0].tolist() == [i for i in range(32)
                                                if abs(i + 0.5 - 16) < s + 0.5], s
        assert np.nonzero(columns)[0].tolist() == [i for i in range(32)
                                                   if abs(i + 0.5 - 16) < half + 0.5], s
    moved = W.shade_maps([shape], [10.25], [19.0], [14.0])[0]
    assert np.allclose(moved, np.roll(grey, (-2, 3), (0, 1)), atol=1e-5)


def test_a_cube_shows_a_bright_top_above_a_mid_front_and_a_dark_side_at_its_right():
    """The cube in oblique view: a front square a, the depth d = 0.35 a going up and right, so
    a + d = 2 s. At s = 13.5 (a = 20, d = 7) centred at (16, 16), well inside each face: the top
    1.0, the front 0.75, the right side 0.45; the corners the depth leaves open (upper left, lower
    right) and the rows and columns past the cube are empty."""
    grey = W.shade_maps([0], [13.5], [16.0], [16.0])[0]
    faces = {1.0: [(4, 15), (7, 12), (5, 22)], 0.75: [(19, 12), (12, 4), (27, 20)],
             0.45: [(15, 25), (24, 24), (8, 27)], 0.0: [(3, 3), (28, 28), (1, 16), (16, 30)]}
    for shade, pixels in faces.items():
        assert [float(grey[p]) for p in pixels] == pytest.approx([shade] * len(pixels),
                                                                 abs=1e-6), shade


def test_a_cylinder_has_a_flat_top_of_0_7_drawn_over_a_body_lit_from_the_left():
    """The cylinder, s = 10.25 (radius r = 8.2, ends r x 0.3 r) centred at (16, 16): inside its
    elliptic top every pixel is 0.7, over the body too; just below the top the body shows its own
    shade, as in its middle; across the body the shade rises to 0.95 left of the middle (light from
    the left) and falls to the ambient 0.3 at the right rim."""
    grey = W.shade_maps([1], [10.25], [16.0], [16.0])[0]
    r, ry = 8.2, 2.46
    y, x = np.mgrid[0:32, 0:32] + 0.5
    top = ((x - 16) / r) ** 2 + ((y - (16 - 10.25 + ry)) / ry) ** 2 < 0.5
    assert top.sum() >= 20 and np.allclose(grey[top], 0.7, atol=1e-6)
    assert np.allclose(grey[11:13, 9:23], grey[20, 9:23], atol=1e-6)
    middle = grey[16]
    assert np.argmax(middle) < 16 and middle.max() == pytest.approx(0.95, abs=0.01)
    assert (np.diff(middle[11:24]) < 0).all() and middle[23] == pytest.approx(0.3, abs=1e-6)


def test_a_sphere_is_lit_from_the_upper_left():
    """The sphere, shaded by its normal, light from the upper left and the front: its upper-left
    quarter brighter than its lower-right, its left half than its right and its top half than its
    bottom, the brightest pixel up and left of the centre at nearly 1, the darkest (the lower right
    rim) the ambient 0.3."""
    grey = W.shade_maps([2], [10.25], [16.0], [16.0])[0]
    y, x = np.mgrid[0:32, 0:32] + 0.5 - 16
    inside = np.hypot(x, y) < 10.25 - 1
    mean = {name: grey[inside & where].mean() for name, where in (
        ("upper left", (x < 0) & (y < 0)), ("lower right", (x > 0) & (y > 0)),
        ("left", x < 0), ("right", x > 0), ("top", y < 0), ("bottom", y > 0))}
    assert mean["upper left"] > mean["lower right"] + 0.3
    assert mean["left"] > mean["right"] + 0.1 and mean["top"] > mean["bottom"] + 0.1
    brightest = np.unravel_index(np.argmax(np.where(inside, grey, 0)), grey.shape)
    assert brightest[0] < 16 and brightest[1] < 16 and grey[brightest] > 0.97
    assert grey[inside].min() == pytest.approx(0.3, abs=1e-6)
    assert (grey[inside & (x > 4) & (y > 4)] < 0.5).all()


def test_render_is_the_grey_picture_times_the_hues_colour_where_the_latents_put_it():
    """render(latents) = shade_maps(shape, size, cx, cy) times hue_rgb(hue), for every shape, off
    centre (cx and cy apart) and a hue between classes."""
    latents = np.array([[100.0, s, 7.3, 15.2, 17.1] for s in range(3)], np.float32)
    grey = W.shade_maps([0, 1, 2], [7.3] * 3, [15.2] * 3, [17.1] * 3)
    expected = grey[..., None] * W.hue_rgb(np.array([100.0]))[:, None, None]
    assert np.allclose(W.render(latents), expected, atol=1e-6)


def test_a_shape_index_a_hair_off_its_integer_is_that_shape_everywhere():
    """Latents carry the shape as a float: 0.999 and 1.001 are a cylinder, 1.999 a sphere, to
    class_bits, to the condition's one-hot and to the renderer."""
    latents = np.array([[144.0, s, 8.0, 16.0, 16.0] for s in (0.001, 0.999, 1.001, 1.999)],
                       np.float32)
    shapes = np.array([0, 1, 1, 2])
    assert W.class_bits(latents)[:, 1].tolist() == shapes.tolist()
    assert np.array_equal(W.conditioning(latents, "continuous")[0][:, 2:5].numpy(),
                          np.eye(3)[shapes])
    assert np.array_equal(W.shade_maps(latents[:, 1], [8.0] * 4, [16.0] * 4, [16.0] * 4),
                          W.shade_maps(shapes, [8.0] * 4, [16.0] * 4, [16.0] * 4))


# ------------------------------------------------------------ shapes3d's condition
def test_class_bits_read_every_class_to_its_jitters_ends_and_clamp_past_the_sizes():
    """class_bits of every code at its class values and at the jitters' ends (hue +-4.99 degrees,
    red at 355.01 reading 0, not 10; half-height +-0.249); half-heights past the classes clamp to
    sizes 0 and 7."""
    bits = np.array([W.code_to_bits(c) for c in W.COMPOSITIONS])
    for dh, ds in ((0, 0), (4.99, 0.249), (-4.99, -0.249), (4.99, -0.249), (-4.99, 0.249)):
        latents = np.stack([(W.HUE_STEP * bits[:, 0] + dh) % 360, bits[:, 1],
                            W.SIZES[bits[:, 2]] + ds, np.full(240, 16.0), np.full(240, 16.0)], 1)
        read = W.class_bits(torch.tensor(latents, dtype=torch.float32)).numpy()
        assert np.array_equal(read, bits), (dh, ds)
    past = torch.tensor([[0.0, 0, 2.0, 16, 16], [0.0, 0, 14.9, 16, 16]])
    assert W.class_bits(past)[:, 2].tolist() == [0, 7]


def test_the_condition_of_every_code_is_its_hue_on_the_circle_shape_size_and_place():
    """continuous: the (cos, sin) of the hue for every class, the shape one-hot, the half-height
    mapped so that sizes 0 and 7 are -1 and 1, the centre's offset (x, y) from the image's centre,
    everything present; a hue or size off the class stays off. discrete and discrete-dropout (at
    evaluation) give the class's hue and size for latents at the jitters' ends and hide the place;
    dropout at evaluation hides nothing."""
    bits = np.array([W.code_to_bits(c) for c in W.COMPOSITIONS])
    centre = 16 + np.random.default_rng(0).uniform(-1, 1, (240, 2))
    exact = np.concatenate([W.HUE_STEP * bits[:, :1], bits[:, 1:2], W.SIZES[bits[:, 2:]],
                            centre], 1)
    values, present = W.conditioning(exact, "continuous")
    angle = np.deg2rad(W.HUE_STEP * bits[:, 0])
    assert np.allclose(values[:, 0], np.cos(angle), atol=1e-5)
    assert np.allclose(values[:, 1], np.sin(angle), atol=1e-5)
    assert np.array_equal(values[:, 2:5].numpy(), np.eye(3)[bits[:, 1]])
    assert np.allclose(values[:, 5], (W.SIZES[bits[:, 2]] - 8.2) / 4.2, atol=1e-6)
    assert set(values[bits[:, 2] == 0, 5].tolist()) == {-1} and set(
        values[bits[:, 2] == 7, 5].tolist()) == {1}
    assert np.allclose(values[:, 6:8], centre - 16, atol=1e-5) and present.all()
    sign = np.where(np.arange(240) % 2, 1, -1)
    jittered = exact + np.stack([4.99 * sign, 0 * sign, -0.249 * sign, 0 * sign, 0 * sign], 1)
    kept = W.conditioning(jittered, "continuous")[0].numpy()
    assert np.allclose(kept[:, 0], np.cos(angle + np.deg2rad(4.99 * sign)), atol=1e-5)
    assert np.allclose(kept[:, 5], values[:, 5].numpy() - 0.249 / 4.2 * sign, atol=1e-5)
    for mode in ("discrete", "discrete-dropout"):
        snapped, hidden = W.conditioning(jittered, mode, 0.5, torch.Generator().manual_seed(0),
                                         train=False)
        assert torch.allclose(snapped[:, :6], values[:, :6], atol=1e-5), mode
        assert not hidden[:, 3].any() and hidden[:, :3].all(), mode
    _, shown = W.conditioning(jittered, "dropout", 0.5, torch.Generator().manual_seed(0),
                              train=False)
    assert shown.all()


def test_dropout_hides_colour_shape_and_size_each_on_its_own_draw_with_its_probability():
    """In training, dropout and discrete-dropout hide each of colour, shape and size on its own
    draw of the rng with probability drop_prob (all three at once about drop_prob cubed); dropout
    never hides the place, discrete-dropout always; 0 hides none, 1 all; another seed draws
    otherwise."""
    many = W.sample_latents(np.zeros((20000, 3), np.int64), np.random.default_rng(0))
    for mode, place in (("dropout", True), ("discrete-dropout", False)):
        _, present = W.conditioning(many, mode, 0.3, torch.Generator().manual_seed(1))
        hidden = ~present[:, :3]
        assert (hidden.float().mean(0) - 0.3).abs().max() < 0.015, mode
        assert abs(hidden.all(1).float().mean() - 0.027) < 0.006, mode
        assert present[:, 3].eq(place).all(), mode
        other = W.conditioning(many, mode, 0.3, torch.Generator().manual_seed(2))[1]
        assert not torch.equal(other, present)
        for p, kept in ((0.0, True), (1.0, False)):
            drawn = W.conditioning(many, mode, p, torch.Generator().manual_seed(1))[1]
            assert drawn[:, :3].eq(kept).all(), (mode, p)


# ------------------------------------------------- shapes3d's readings, at each rule's edge
def test_pixel_hues_is_the_hsv_hue_of_every_pixel_and_inverts_hue_rgb():
    """pixel_hues against colorsys.rgb_to_hsv on random colours (each channel the largest in turn,
    hues all round the circle), and the hue of hue_rgb(h) is h all round the circle."""
    images = np.random.default_rng(0).uniform(size=(3, 8, 8, 3))
    direct = np.array([[[360 * colorsys.rgb_to_hsv(*p)[0] for p in row] for row in image]
                       for image in images])
    assert np.allclose(W.pixel_hues(images), direct, atol=1e-6)
    hues = np.arange(0, 360, 0.5)
    assert np.allclose(W.pixel_hues(W.hue_rgb(hues)[None, :, None]), hues[:, None], atol=1e-9)


def test_templates_run_shape_size_cx_cy_and_are_the_renderers_grey_pictures():
    """templates(): the (shape, size, cx, cy) of FIT_SIZES (2 to 15 by 0.2) and FIT_CENTRES
    (14 to 18 by 0.5), cy the fastest, shape the slowest; each picture the grey picture shade_maps
    draws there, flattened row by row; norms their sums of squares."""
    found = W.templates()
    latents, pictures = found["latents"], found["pictures"].numpy()
    assert latents.shape == (3 * 66 * 81, 4) and pictures.shape == (3 * 66 * 81, 32 * 32)
    assert np.allclose(latents[[0, 1, 9, 81, 66 * 81, -1]], [
        (0, 2.0, 14, 14), (0, 2.0, 14, 14.5), (0, 2.0, 14.5, 14), (0, 2.2, 14, 14),
        (1, 2.0, 14, 14), (2, 15.0, 18, 18)], atol=1e-5)
    picked = np.random.default_rng(0).choice(len(latents), 12, replace=False)
    picked = [k for k in picked if latents[k, 2] != latents[k, 3]] + [1, 9]
    for k in picked:
        assert np.allclose(pictures[k], W.shade_maps(*latents[k:k + 1].T)[0].ravel(),
                           atol=1e-6), latents[k]
    assert np.allclose(found["norms"].numpy(), (pictures ** 2).sum(1), rtol=1e-5)


def test_refined_size_step_stays_within_half_a_step_and_makes_none_at_the_top_or_on_a_cap():
    """The grid's largest size (shape 0: its next template in order is shape 1's smallest) makes
    no step; a parabola whose vertex lies further than half a grid step is held to half a step
    (0.1 px); a misfit that bends down (a cap) makes none."""
    found = W.templates()["latents"]
    stride = len(W.FIT_CENTRES) ** 2
    top = (len(W.FIT_SIZES) - 1) * stride + 40                   # shape 0, size 15, one centre
    assert found[top, :2].tolist() == pytest.approx([0, 15.0])
    error = torch.full((1, len(found)), 100.0)
    error[0, top - stride], error[0, top], error[0, top + stride] = 1.0, 0.0, 0.5
    assert W.refined_size_step(error, torch.tensor([top]))[0] == 0.0
    at = 30 * stride + 40
    for below, here, above, step in ((0.0, 1.0, 4.0, -0.1), (4.0, 1.0, 0.0, 0.1),
                                     (0.0, 1.0, 0.5, 0.0)):
        error = torch.full((1, len(found)), 100.0)
        error[0, at - stride], error[0, at], error[0, at + stride] = below, here, above
        assert W.refined_size_step(error, torch.tensor([at]))[0] == pytest.approx(step, abs=1e-6)


def test_the_colour_read_is_the_objects_mean_hue_for_every_class_at_its_jitters_ends():
    """The hue read is the object's mean hue, within 0.1 degree of the drawn one, and the colour
    the nearest class hue on the circle: every class drawn 4.9 degrees either side (red at 355.1
    is red, not a colour 10)."""
    hues = ((W.HUE_STEP * np.arange(10))[:, None] + [-4.9, 4.9]).ravel() % 360
    latents = np.array([[h, 1, 8.0, 16.0, 16.0] for h in hues], np.float32)
    solids = W.read_solids(W.render(latents))
    assert solids["bits"][:, 0].tolist() == np.repeat(np.arange(10), 2).tolist()
    assert np.abs((solids["hue"] - hues + 180) % 360 - 180).max() < 0.1


def test_the_hue_read_is_the_chroma_weighted_circular_mean_of_the_objects_strong_pixels():
    """A sphere drawn in two hues of one class, its left half (lit, so the more chroma) in one and
    its right in the other: the hue read is the circular mean of its pixels' hues weighted by their
    chroma, over the object's pixels of chroma over 0.35 (computed directly), for 130 and 160
    degrees and for 350 and 10 (red across 0, not cyan)."""
    x = np.arange(32)[None, :, None] + 0.5
    for left, right in ((130.0, 160.0), (350.0, 10.0)):
        one, other = W.render(np.array([[left, 2, 8.0, 16, 16], [right, 2, 8.0, 16, 16]],
                                       np.float32))
        image = np.where(x < 16, one, other)
        value, chroma = image.max(-1), image.max(-1) - image.min(-1)
        weight = chroma * ((value > 0.2) & (chroma > 0.35))
        angle = np.deg2rad(W.pixel_hues(image[None])[0])
        direct = np.rad2deg(np.arctan2((np.sin(angle) * weight).sum(),
                                       (np.cos(angle) * weight).sum())) % 360
        solids = W.read_solids(image[None])
        assert abs((solids["hue"][0] - direct + 180) % 360 - 180) < 0.01, (left, right)
        assert solids["bits"][0, 0] == round(left / W.HUE_STEP) % 10 and W.legible(solids).all()


def test_the_fit_reads_the_value_within_two_pixels_of_the_object_and_nothing_further():
    """A grey speck (0.6, not coloured) two pixels right of a clean sphere's last coloured pixel
    is misfit the fit must explain (local 0.6); three pixels right it is floor, not read."""
    sphere = clean(2, [W.SIZES[2]])[0]
    value = sphere.max(-1)
    coloured = (value > 0.2) & (value - sphere.min(-1) > 0.5 * value)
    last = np.nonzero(coloured[16])[0].max()
    solids = W.read_solids(np.stack([with_pixels(sphere, [(16, last + k)], 0.6) for k in (2, 3)]))
    assert solids["local"] == pytest.approx([0.6, 0.0], abs=1e-3)


LEGIBLE_AS_SET = {            # rule: (the threshold, legible; just past it, not legible)
    "area": (6, 5), "second_area": (1, 2), "other_hue": (0.08, 0.0801), "other_patch": (4, 5),
    "saturation": (0.6, 0.599), "local": (2.1, 2.101), "shape_margin": (0.38, 0.379),
    "beyond": (1.2, 1.201)}


def legible_but_for(solids, rule):
    """legible(), with `rule`'s measurement taken as a clean render's: what the other rules say."""
    passing = {"area": 100, "second_area": 0, "other_hue": 0.0, "other_patch": 0,
               "saturation": 1.0, "gain": 1.0, "local": 0.0, "shape_margin": 1.0, "beyond": 0.0}
    return W.legible(dict(solids, **{rule: np.full(len(solids["area"]), passing[rule])}))


def test_legible_takes_each_threshold_itself_and_refuses_just_past_it():
    """legible, rule by rule, on the measurements of a clean render with one of them moved to its
    threshold (legible) and just past it (not legible), the thresholds as the labels set them:
    gain within 0.75 to 1.3 both ends taken."""
    solids = W.read_solids(clean(2, [8.0]))
    assert W.legible(solids).tolist() == [True]
    edges = [(rule, at, past) for rule, (at, past) in LEGIBLE_AS_SET.items()]
    edges += [("gain", 0.75, 0.749), ("gain", 1.3, 1.301)]
    for rule, at, past in edges:
        assert W.legible(dict(solids, **{rule: np.array([at])})).tolist() == [True], (rule, at)
        assert W.legible(dict(solids, **{rule: np.array([past])})).tolist() == [False], rule


def test_the_object_is_the_largest_patch_of_pixels_brighter_than_0_2_with_chroma_over_half():
    """area counts the pixels of the largest 8-connected patch whose value is over 0.2 and whose
    chroma is over half the value: a 3x4 block counts at value 0.21 and at chroma 0.51 of the
    value 0.8, not at 0.19 nor at 0.49; a block touching another at a corner joins it."""
    def block(colour, extra=None):
        image = np.zeros((32, 32, 3), np.float32)
        image[10:13, 10:14] = colour
        if extra is not None:
            image[13:15, 14:16] = extra
        return image
    images = np.stack([block((0, 0.21, 0)), block((0, 0.19, 0)),
                       block((0.8 * 0.49, 0.8, 0.8 * 0.49)), block((0.8 * 0.51, 0.8, 0.8 * 0.51)),
                       block((0, 0.5, 0), (0, 0.5, 0))])
    assert W.read_solids(images)["area"].tolist() == [12, 0, 12, 0, 16]


def with_pixels(image, pixels, colour):
    """The image (H, W, 3) with these pixels (y, x) of a colour, or of another image's colour."""
    image = image.copy()
    for y, x in pixels:
        image[y, x] = colour[y, x] if np.ndim(colour) == 3 else colour
    return image


def test_a_speck_beside_the_solid_is_tolerated_and_two_pixels_are_a_second_object():
    """max_second_area: beside a clean sphere (far from it) one coloured pixel is a speck, legible;
    two touching pixels are a second object, refused by that rule alone."""
    sphere = clean(2, [8.0])[0]
    green = W.hue_rgb(np.array([144.0]))[0]
    images = np.stack([with_pixels(sphere, [(1, 1)], green),
                       with_pixels(sphere, [(1, 1), (1, 2)], green)])
    solids = W.read_solids(images)
    assert solids["second_area"].tolist() == [1, 2]
    assert W.legible(solids).tolist() == [True, False]
    assert legible_but_for(solids, "second_area").all()


def test_the_share_of_another_hue_is_counted_over_the_objects_strong_pixels_to_its_threshold():
    """max_other_hue: single pixels of the next class's hue (same shade, none touching another),
    as a share of the object's pixels of chroma over 0.35 (a sphere's dim rim is not one of them):
    13 of 164 (0.079) legible, 14 (0.085) not, refused by that rule alone."""
    sphere = clean(2, [8.0])[0]
    beside = clean(2, [8.0], color=5)[0]
    strong = (sphere.max(-1) - sphere.min(-1)) > 0.35
    assert strong.sum() == 164 and ((sphere.max(-1) > 0.2).sum() > 190)
    lattice = [(y, x) for y, x in zip(*np.nonzero(strong)) if y % 2 == 0 and x % 2 == 0]
    solids = W.read_solids(np.stack([with_pixels(sphere, lattice[:k], beside) for k in (13, 14)]))
    assert solids["other_hue"] == pytest.approx([13 / 164, 14 / 164])
    assert solids["other_patch"].tolist() == [1, 1]
    assert W.legible(solids).tolist() == [True, False]
    assert legible_but_for(solids, "other_hue").all()


def test_a_patch_of_another_hue_is_tolerated_up_to_4_pixels():
    """max_other_patch: a connected patch of the next class's hue inside a clean sphere: 2x2 (4
    pixels) legible, 2x2 and one more (5) not, refused by that rule alone."""
    sphere = clean(2, [8.0])[0]
    beside = clean(2, [8.0], color=5)[0]
    square = [(14, 14), (14, 15), (15, 14), (15, 15)]
    solids = W.read_solids(np.stack([with_pixels(sphere, patch, beside)
                                     for patch in (square, square + [(16, 14)])]))
    assert solids["other_patch"].tolist() == [4, 5]
    assert W.legible(solids).tolist() == [True, False]
    assert legible_but_for(solids, "other_patch").all()


def test_saturation_is_the_objects_chroma_over_value_and_a_paler_one_is_refused():
    """min_saturation: a sphere mixed with grey keeps its value and hue and loses chroma: its
    reading's saturation is the mix's (0.61, 0.59), legible at 0.61, refused at 0.59 by that rule
    alone."""
    grey = W.shade_maps([2], [8.0], [16.0], [16.0])
    green = W.hue_rgb(np.array([144.0]))[:, None, None]
    images = np.concatenate([grey[..., None] * ((1 - s) + s * green) for s in (0.61, 0.59)])
    solids = W.read_solids(images.astype(np.float32))
    assert solids["saturation"] == pytest.approx([0.61, 0.59], abs=1e-5)
    assert W.legible(solids).tolist() == [True, False]
    assert legible_but_for(solids, "saturation").all()


def test_gain_is_the_objects_brightness_against_the_renderers_within_0_75_to_1_3():
    """gain: a clean sphere scaled by 0.76, 0.74, 1.29 and 1.31 (past 1: as bright against the
    renderer's) reads that gain; legible at 0.76 and 1.29, refused at 0.74 and 1.31 by gain
    alone."""
    sphere = clean(2, [8.0])
    images = np.concatenate([g * sphere for g in (0.76, 0.74, 1.29, 1.31)])
    solids = W.read_solids(images.astype(np.float32))
    assert solids["gain"] == pytest.approx([0.76, 0.74, 1.29, 1.31], abs=1e-4)
    assert W.legible(solids).tolist() == [True, False, True, False]
    assert legible_but_for(solids, "gain").all()


def test_a_dent_is_the_misfit_summed_over_a_3x3_window_and_refused_past_2_1():
    """max_local: a 3x3 window of a clean cube's front face (0.75) dimmed by 2.08 and 2.29 in all
    reads a local misfit near 2.0 and 2.2 (the fit's gain takes a little); legible at 2.0,
    refused at 2.2 by that rule alone."""
    cube = clean(0, [8.0])[0]
    images = []
    for total in (2.08, 2.29):
        image = cube.copy()
        image[17:20, 11:14] *= 1 - total / 9 / 0.75
        images.append(image)
    solids = W.read_solids(np.stack(images))
    assert 1.95 < solids["local"][0] < 2.05 and 2.15 < solids["local"][1] < 2.25
    assert W.legible(solids).tolist() == [True, False]
    assert legible_but_for(solids, "local").all()


def test_a_solid_between_two_shapes_is_refused_where_the_next_shapes_fit_comes_near():
    """min_shape_margin: a cylinder faded into a sphere (0.554 and 0.548 of the cylinder) reads as
    a cylinder, its margin over the sphere's best fit 1 - e_cylinder / e_sphere (against a direct
    least-squares fit of every template) about 0.39 and 0.36: legible, then refused by that rule
    alone."""
    cylinder, sphere = W.shade_maps([1, 2], [8.0] * 2, [16.0] * 2, [16.0] * 2)
    green = W.hue_rgb(np.array([144.0]))[0]
    images = np.stack([(w * cylinder + (1 - w) * sphere)[..., None] * green
                       for w in (0.554, 0.548)]).astype(np.float32)
    solids = W.read_solids(images)
    assert solids["bits"][:, 1].tolist() == [1, 1]
    pictures = W.templates()["pictures"].numpy()
    for image, margin in zip(images, solids["shape_margin"]):
        b = image.max(-1).ravel()
        gain = pictures @ b / (pictures ** 2).sum(1)
        error = ((b - gain[:, None] * pictures) ** 2).sum(1)
        best = np.sort(error.reshape(3, -1).min(1))
        assert margin == pytest.approx(1 - best[0] / best[1], abs=1e-3)
    assert 0.385 < solids["shape_margin"][0] < 0.40 and 0.36 < solids["shape_margin"][1] < 0.375
    assert W.legible(solids).tolist() == [True, False]
    assert legible_but_for(solids, "shape_margin").all()


def test_precise_is_composed_with_at_most_8_pixels_a_quarter_off_the_render_of_what_was_read():
    """readings' precise: composed, and the render of what was read differs from the sample by
    more than 0.25 (in any channel) at 8 pixels at most. Specks on the floor, far from the solid
    and not coloured, leave the reading as it was (the fit reads near the object only) but are off
    the render: 8 specks of (0.3, 0.2, 0.2) keep a solid precise, 9 do not; 16 of exactly 0.25
    are not off. A legible solid read as other values than asked is neither composed nor precise."""
    spots = [(y, x) for y in (0, 2) for x in range(0, 32, 2)]
    for shape in range(3):
        solid = clean(shape, [W.SIZES[2]], color=7)[0]
        images = np.stack([solid, with_pixels(solid, spots[:8], (0.3, 0.2, 0.2)),
                           with_pixels(solid, spots[:9], (0.3, 0.2, 0.2)),
                           with_pixels(solid, spots, (0.25, 0.25, 0.25))])
        asked = np.array([[7, shape, 2]] * 4)
        judged = W.readings(images, asked)
        assert judged["composed"].all() and judged["legible"].all(), shape
        assert judged["precise"].tolist() == [True, True, False, True], shape
        solids = W.read_solids(images)
        assert np.abs(solids["local"]).max() < 1e-3 and np.allclose(solids["gain"], 1, atol=1e-4)
        assert np.allclose(solids["fit"], solids["fit"][0], atol=1e-4)
        wrong = W.readings(images[:1], asked[:1] + [0, 0, 1])
        assert (wrong["legible"].tolist(), wrong["composed"].tolist(),
                wrong["precise"].tolist()) == ([True], [False], [False])


def test_the_caches_key_follows_the_renderers_own_pictures(monkeypatch):
    """DEFINITION keys the fitted probes and tokenizers: a change to a number inside the drawing
    (here every shade 1% darker), which no named constant holds, changes it and so the cache's
    file; the same drawing gives the same key."""
    assert W.definition()[:-1] == W.DEFINITION and W.definition() == W.definition()
    before, fingerprint = data.cache_path("probe-study", (), W), W.definition()
    real = W.shade_maps
    monkeypatch.setattr(W, "shade_maps", lambda *args: real(*args) * 0.99)
    assert W.definition()[:-1] == fingerprint[:-1] and W.definition() != fingerprint
    assert data.cache_path("probe-study", (), W) != before
