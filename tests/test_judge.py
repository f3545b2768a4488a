"""The judge (judge.py) on real and hand-made images: its three readings, each held to its own
definition where the readings must disagree, and its agreement with a person."""
import os
import re

import numpy as np
import pytest
import torch

import data
import judge
import probe


@pytest.fixture(scope="module")
def real():
    return data.make_dataset(data.COMPOSITIONS, 100, seed=probe.HELD_OUT_SEED + 7)


def chimeras(codes, per_code=8, fill=0.4, seed=0):
    """A red outline filled blue (or a blue one filled red): each asked composition drawn in its
    class colour, with the middle `fill` of its size painted in the other class colour.
    (images (N, H, W, 3), the asked bits (N, 3))."""
    bits = np.repeat([data.code_to_bits(code) for code in codes], per_code, 0)
    outline = data.sample_latents(bits, np.random.default_rng(seed))
    middle = outline.copy()
    middle[:, 4] *= fill
    middle[:, 1:4] = data.CLASS_COLORS[1 - bits[:, 1]]
    inner = data.render(middle)
    coverage = inner.max(-1, keepdims=True) / inner.max()
    return (data.render(outline) * (1 - coverage) + inner * coverage).astype(np.float32), bits


# ------------------------------------------------------------------------- on real images
def test_all_three_readings_pass_real_images(real):
    images, bits, _ = real
    result = judge.evaluate(images, bits)
    for reading in ("acc", "fidelity", "probe_acc"):
        assert min(result[reading].values()) >= 0.99, (reading, result[reading])
    assert result["malformed"] <= 0.01
    assert result["seen"] >= 0.99 and result["level1"] >= 0.99 and result["level2"] >= 0.99
    assert result["retrieval_1nn"] >= 0.95


def test_judge_on_noisy_images(real):
    images, bits, _ = real
    noisy = np.clip(images + np.random.default_rng(1).normal(0, 0.05, images.shape), 0, 1)
    result = judge.evaluate(noisy, bits)
    assert min(result["acc"].values()) >= 0.95, result["acc"]
    assert min(result["fidelity"].values()) >= 0.95, result["fidelity"]


def test_judge_accepts_uint8_images(real):
    images, bits, _ = real
    as_uint8 = (images * 255).round().astype(np.uint8)
    assert min(judge.evaluate(as_uint8, bits)["acc"].values()) >= 0.99


def test_wrong_factors_are_scored_wrong_by_every_reading(real):
    images, bits, _ = real
    result = judge.evaluate(images, 1 - bits)
    for reading in ("acc", "fidelity", "probe_acc"):
        assert max(result[reading].values()) <= 0.01, reading


def test_each_factor_is_read_from_the_drawing(real):
    """Flip one asked bit at a time: the composition reading must notice every one."""
    images, bits, _ = real
    for factor in range(3):
        asked = bits.copy()
        asked[:, factor] ^= 1
        assert judge.readings(images, asked)["composed"].mean() <= 0.01, data.FACTORS[factor]


def test_the_factor_reader_reads_factors(real):
    images, bits, _ = real
    assert (judge.load_reader().predict(images) == bits).all(1).mean() >= 0.99


def test_evaluate_reports_the_product_rule(real):
    """Ask for the right shape and size but the wrong colour on half of 000's images: the study's
    probe then reads colour right on half of them, so probe_acc is about 0.5, not the share with
    all three right of the other readings' kind."""
    images, bits, _ = real
    keep = (bits == [0, 0, 0]).all(1)
    asked = bits[keep].copy()
    asked[::2, 1] = 1                                              # colour wrong on every other one
    result = judge.evaluate(images[keep], asked)
    by_hand = probe.load_probe().predict(images[keep]) == asked
    assert set(result["probe_acc"]) == {"000", "010"}
    asked_000 = (asked == [0, 0, 0]).all(1)
    assert result["probe_acc"]["000"] == pytest.approx(probe.probe_accuracy(by_hand[asked_000]))


def test_a_wobbly_triangle_is_composed_but_not_precise():
    """The case that started it: an outline off by about a pixel all round."""
    from worlds import shapes2d_calibration as calibration
    accepted, _, bits = calibration.calibration_images(60, seed=5)
    wobbly = accepted["boundary jitter (up to 1 px)"]
    judged = judge.readings(wobbly, bits)
    assert judged["composed"].mean() >= 0.95
    assert judged["precise"].mean() <= 0.5          # the tight test rejects many of them


def test_judge_evaluate_aggregates_each_reading_by_composition_and_split_and_over_samples():
    """judge.evaluate's aggregates against their parts, on eight samples whose per-sample readings
    are set by hand (judge.readings stood in) and whose five nearest real images are placed by
    hand (one feature a sample, the references 1-5 apart from it): by composition over the codes
    asked only, each split over its codes present, malformed over every sample, retrieval 1-NN by
    the nearest, 5-NN by 3 of 5 (the boundary: 3 counts, 2 does not)."""
    codes = ["000", "000", "000", "001", "011", "011", "111", "111"]
    composed = [1, 0, 1, 1, 0, 1, 0, 1]
    precise = [1, 0, 0, 1, 0, 1, 0, 0]
    legible = [1, 1, 1, 1, 0, 1, 0, 1]
    probe_factors = [[1, 1, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1], [1, 1, 0], [1, 0, 0], [0, 0, 0],
                     [1, 1, 1]]
    nearest_right = [[1, 1, 1, 0, 0], [0, 1, 1, 1, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1],
                     [0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 1, 0, 0, 1], [1, 1, 1, 0, 0]]
    bits = np.array([data.code_to_bits(c) for c in codes])
    images = np.zeros((8, 1, 1, 3), np.float32)
    images[:, 0, 0, 0] = 100 * np.arange(8)                        # sample i sits at 100 i
    reference = np.array([[100 * i + k + 1, 0, 0] for i in range(8) for k in range(5)])
    reference_bits = np.array([b if right else 1 - b
                               for b, row in zip(bits, nearest_right) for right in row])
    judged = {"composed": np.array(composed, bool), "precise": np.array(precise, bool),
              "legible": np.array(legible, bool), "probe_factors": np.array(probe_factors, bool)}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(judge, "readings", lambda images, factors, *world: judged)
        patch.setattr(judge, "instruments", lambda *world: {
            "reference": torch.as_tensor(reference, dtype=torch.float32),
            "reference_bits": reference_bits})
        patch.setattr(judge, "centred_pixels", lambda x: torch.as_tensor(x).flatten(1))
        result = judge.evaluate(images, bits)
    assert result["acc"] == pytest.approx({"000": 2 / 3, "001": 1, "011": 1 / 2, "111": 1 / 2})
    assert result["fidelity"] == pytest.approx({"000": 1 / 3, "001": 1, "011": 1 / 2, "111": 0})
    assert result["probe_acc"] == pytest.approx({"000": 2 / 3 * 2 / 3 * 1, "001": 1,
                                                 "011": 1 * 1 / 2 * 0, "111": 1 / 2 ** 3})
    assert (result["seen"], result["level1"], result["level2"]) == pytest.approx(
        ((2 / 3 + 1) / 2, 1 / 2, 1 / 2))                        # 010 and 100 absent, 101, 110 too
    assert result["malformed"] == pytest.approx(2 / 8)
    assert result["retrieval_1nn"] == pytest.approx(5 / 8)             # samples 0, 2, 3, 5, 7
    assert result["retrieval_5nn"] == pytest.approx(4 / 8)             # samples 0, 1, 3, 7


def test_judge_retrieval_counts_a_neighbour_only_when_all_three_factors_are_asked_ones():
    """retrieval_1nn and retrieval_5nn against neighbours that match the asked composition in some
    factors and not in others (judge.readings and the references stood in, as above): a neighbour
    with one factor off (shape, colour or size) or two is another composition; 5-NN needs 3 of 5
    neighbours with all three."""
    codes = ["000", "011", "101", "110", "111"]
    off = [[{0}, set(), set(), set(), {1, 2}],             # 1-NN shape off; 3 of 5 exact
           [set(), {1}, {2}, {0, 2}, set()],               # 1-NN exact; 2 of 5, three partial
           [{1, 2}, {0, 1}, set(), set(), {2}],            # 1-NN two off; 2 of 5
           [{2}, set(), set(), set(), {0}],                # 1-NN size off; 3 of 5
           [{1}, {0}, {2}, {1}, set()]]                    # 1-NN colour off; 1 of 5
    bits = np.array([data.code_to_bits(c) for c in codes])
    images = np.zeros((5, 1, 1, 3), np.float32)
    images[:, 0, 0, 0] = 100 * np.arange(5)                        # sample i sits at 100 i
    reference = np.array([[100 * i + k + 1, 0, 0] for i in range(5) for k in range(5)])
    reference_bits = np.array([[1 - b if f in flipped else b for f, b in enumerate(asked)]
                               for asked, row in zip(bits, off) for flipped in row])
    judged = {key: np.ones(5, bool) for key in ("composed", "precise", "legible")}
    judged["probe_factors"] = np.ones((5, 3), bool)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(judge, "readings", lambda images, factors, *world: judged)
        patch.setattr(judge, "instruments", lambda *world: {
            "reference": torch.as_tensor(reference, dtype=torch.float32),
            "reference_bits": reference_bits})
        patch.setattr(judge, "centred_pixels", lambda x: torch.as_tensor(x).flatten(1))
        result = judge.evaluate(images, bits)
    assert result["retrieval_1nn"] == pytest.approx(1 / 5)             # sample 1
    assert result["retrieval_5nn"] == pytest.approx(2 / 5)             # samples 0 and 3


def test_judge_legible_holds_each_tolerance_at_its_edge():
    """judge.legible on measurements set by hand: each one at its tolerance is legible, just past it
    is not (in the measurement's own units: pixels, a fraction of the object, a colour channel);
    the shape is a circle below circle_below or a triangle from triangle_above, not in between."""
    rule = judge.LEGIBLE
    clean = {"area": 40, "second_area": 0, "chimera": 0.0, "other_patch": 0, "color_error": 0.0,
             "size": 7.0, "reach": 0.0, "local": 0.0, "circle_score": 0.0, "w": 0.0}
    cases = [({}, True),
             ({"area": rule["min_area"]}, True), ({"area": rule["min_area"] - 1}, False),
             ({"second_area": rule["max_second_area"]}, True),
             ({"second_area": rule["max_second_area"] + 1}, False),
             ({"chimera": rule["max_chimera"]}, True),
             ({"chimera": rule["max_chimera"] + 0.01}, False),
             ({"other_patch": rule["max_other_patch"]}, True),
             ({"other_patch": rule["max_other_patch"] + 1}, False),
             ({"color_error": rule["max_color_error"]}, True),
             ({"color_error": rule["max_color_error"] + 0.01}, False),
             ({"size": rule["sizes"][0]}, True), ({"size": rule["sizes"][0] - 0.05}, False),
             ({"size": rule["sizes"][1]}, True), ({"size": rule["sizes"][1] + 0.05}, False),
             ({"reach": rule["max_reach"]}, True), ({"reach": rule["max_reach"] + 0.01}, False),
             ({"local": rule["max_local"]}, True), ({"local": rule["max_local"] + 0.01}, False),
             ({"w": 0.2, "circle_score": rule["circle_below"]}, True),
             ({"w": 0.2, "circle_score": rule["circle_below"] + 0.01}, False),
             ({"w": rule["triangle_above"], "circle_score": 0.9}, True),
             ({"w": rule["triangle_above"] - 0.01, "circle_score": 0.9}, False)]
    objects = {key: np.array([changed.get(key, value) for changed, _ in cases])
               for key, value in clean.items()}
    got = judge.legible(objects)
    assert [bool(g) for g in got] == [want for _, want in cases], \
        [changed for (changed, want), g in zip(cases, got) if bool(g) != want]


def test_judge_well_formed_holds_each_tolerance_at_its_edge(monkeypatch):
    """judge.well_formed on fits set by hand (judge.fit_world stood in): at most MAX_BAD_PIXELS
    pixels off, a colour within COLOR_JITTER + 0.07 of a class colour in every channel, a size
    within half a pixel of the world's range; each at its edge and just past it."""
    red, edge = data.CLASS_COLORS[0], data.COLOR_JITTER + 0.07
    low, high = data.SIZE_RANGES.min() - 0.5, data.SIZE_RANGES.max() + 0.5
    cases = [({}, True), ({"bad": judge.MAX_BAD_PIXELS}, True),
             ({"bad": judge.MAX_BAD_PIXELS + 1}, False),
             ({"color": red + [edge - 0.005, 0, 0]}, True),
             ({"color": red + [0, -(edge + 0.005), 0]}, False),
             ({"color": data.CLASS_COLORS[1] + [0, 0, edge - 0.005]}, True),
             ({"size": low}, True), ({"size": low - 0.05}, False),
             ({"size": high}, True), ({"size": high + 0.05}, False)]
    latents = np.array([[0.0, *changed.get("color", red), changed.get("size", 7.0), 16.0, 16.0]
                        for changed, _ in cases])
    bad = np.array([changed.get("bad", 0) for changed, _ in cases])
    monkeypatch.setattr(judge, "fit_world", lambda images: (latents, bad))
    got = judge.well_formed(np.zeros((len(cases), 32, 32, 3), np.float32))
    assert [bool(g) for g in got] == [want for _, want in cases], \
        [changed for (changed, want), g in zip(cases, got) if bool(g) != want]


def test_judge_gallery_agreement_counts_each_verdict_by_the_persons_label(tmp_path, monkeypatch):
    """The agreement and its confusion table from six verdicts set by hand (judge.verdicts stood
    in): rows are the person's labels, columns the judge's."""
    person = np.array([0, 0, 1, 2, 2, 2])
    said = np.array([0, 1, 1, 2, 0, 2])
    np.savez(tmp_path / "gallery.npz", images=np.zeros((6, 1)), factors=np.zeros((6, 3)),
             labels=person)
    monkeypatch.setattr(judge, "verdicts", lambda images, factors: said)
    agreement, confusion = judge.gallery_agreement(str(tmp_path / "gallery.npz"))
    assert agreement == pytest.approx(4 / 6)
    assert confusion.tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 2]]


def test_split_means():
    means = judge.split_means({"000": 1.0, "001": 0.5, "011": 0.25, "111": 0.0})
    assert means == {"seen": 0.75, "level1": 0.25, "level2": 0.0}


# ------------------------------------------- hand-made samples where the readings disagree
def test_judge_refuses_a_chimera_the_study_probe_credits():
    """A red outline filled blue, asked for its outline's colour: the study's probe reads all
    three factors right on every one, and the object's own bits are the asked ones, yet it is
    no legible object, so neither the composed reading nor fidelity accepts it."""
    images, bits = chimeras(["000", "011", "110"])
    judged = judge.readings(images, bits)
    assert judged["probe_factors"].all(), "the study's probe must credit these chimeras"
    assert (judge.read_objects(images)["bits"] == bits).all()
    assert not judged["legible"].any() and not judged["composed"].any()
    assert not judged["precise"].any()
    result = judge.evaluate(images, bits)
    assert all(result["probe_acc"][code] == 1.0 for code in ("000", "011", "110"))
    assert all(result["acc"][code] == 0.0 for code in ("000", "011", "110"))
    assert result["malformed"] == 1.0


def test_judge_refuses_a_legible_object_with_one_factor_wrong(real):
    """A clean real image asked with one factor flipped: it is one legible object, so only the
    factors can refuse it. Fidelity needs all three right, as the composed reading does; the
    study's probe reads the flipped factor wrong and the other two right."""
    images, bits, _ = real
    images, bits = images[::4], bits[::4]
    for factor in range(3):
        asked = bits.copy()
        asked[:, factor] ^= 1
        judged = judge.readings(images, asked)
        name = data.FACTORS[factor]
        assert judged["legible"].mean() >= 0.99, name
        assert judged["composed"].mean() <= 0.01, name
        assert judged["precise"].mean() <= 0.01, name
        right = judged["probe_factors"].mean(0)
        assert right[factor] <= 0.01 and np.delete(right, factor).min() >= 0.99, (name, right)


def test_judge_reads_fidelity_with_the_factor_reader_and_probe_acc_with_the_study_probe(real):
    """Real images moved 6 px right: the factor reader centres them first and reads them right;
    the study's probe, on raw pixels, misreads many. Each reading must follow its own classifier
    (fidelity the reader, probe_acc the study's probe), and the composed reading neither."""
    images, bits, _ = real
    moved = np.roll(images[::4], 6, axis=2)
    bits = bits[::4]
    study_right = probe.load_probe().predict(moved) == bits                 # (N, 3)
    reader_right = (judge.load_reader().predict(moved) == bits).all(1)      # (N,)
    well_formed = judge.well_formed(moved)
    disagree = well_formed & reader_right & ~study_right.all(1)
    assert disagree.mean() >= 0.3, "the moved images must split the two classifiers"
    judged = judge.readings(moved, bits)
    assert np.array_equal(judged["probe_factors"], study_right)
    assert np.array_equal(judged["precise"], well_formed & reader_right)
    assert judged["precise"][disagree].all() and not judged["probe_factors"][disagree].all(1).any()
    assert judged["composed"][disagree].mean() >= 0.95


def test_judge_probe_acc_is_the_product_of_per_factor_accuracies_per_composition(real):
    """000 asked of ten real 100s (shape wrong) and ten real 010s (colour wrong), 111 of ten real
    111s: no 000 sample has all three right, yet probe_acc is 0.5 x 0.5 x 1 = 0.25 for 000, and
    1 for 111, each over its own samples."""
    images, bits, _ = real
    study = probe.load_probe()
    picked = []
    for code in ("100", "010", "111"):
        mine = (bits == data.code_to_bits(code)).all(1)
        mine &= (study.predict(images) == bits).all(1)          # the ones the probe reads right
        picked.append(np.flatnonzero(mine)[:10])
    picked = np.concatenate(picked)
    asked = np.repeat([[0, 0, 0], [0, 0, 0], [1, 1, 1]], 10, 0)
    result = judge.evaluate(images[picked], asked)
    assert result["probe_acc"] == {"000": pytest.approx(0.25), "111": 1.0}
    assert result["acc"]["000"] == 0.0 and result["fidelity"]["000"] == 0.0
    assert result["acc"]["111"] == 1.0


def test_judge_composed_needs_one_legible_object_and_all_three_factors(real):
    """Three samples asked for 000: a real 000 (composed), a chimera whose bits read 000 (not one
    legible object: refused) and a real 001 (legible, its size wrong: refused)."""
    images, bits, _ = real
    chimera, _ = chimeras(["000"], per_code=1)
    clean = images[(bits == [0, 0, 0]).all(1)][:1]
    wrong_size = images[(bits == [0, 0, 1]).all(1)][:1]
    samples = np.concatenate([clean, chimera, wrong_size])
    judged = judge.readings(samples, np.zeros((3, 3), np.int64))
    assert judged["legible"].tolist() == [True, False, True]
    assert (judge.read_objects(samples)["bits"][:2] == 0).all()       # the chimera reads as 000
    assert judged["composed"].tolist() == [True, False, False]


# -------------------------------------------------------------------- agreement with a person
def test_the_judge_agrees_with_a_person_on_the_gallery():
    """tests/gallery.npz: model samples of every generator, early and late, labelled by eye
    (GIVT twice: seed 0 and, labelled after the judge's last change and before it was run on
    them, seed 1). The mark the judge was built for is 95%; it reaches about 90% (GIVT's ragged
    drawings, which a person accepts and the judge does not, are most of the gap: README,
    "The judge"). This holds it to what it reaches, overall and per model, so that a change
    cannot make it worse."""
    gallery = np.load(judge.GALLERY)
    assert len(gallery["labels"]) >= 480 and set(gallery["labels"].tolist()) <= {0, 1, 2}
    models = np.array([re.sub(r"-seed\d+$", "", str(source).split(" step")[0])
                       for source in gallery["sources"]])
    assert set(models) == {"dit", "givt", "jepa_maskgit", "mar", "maskgit"}    # every model
    agreement, confusion = judge.gallery_agreement()
    assert confusion.sum() == len(gallery["labels"])
    assert agreement >= 0.89, f"agreement {agreement:.3f}\n{confusion}"
    judged = judge.verdicts(gallery["images"], gallery["factors"])
    for model in set(models):
        mine = models == model
        assert (judged[mine] == gallery["labels"][mine]).mean() >= 0.75, model


def test_gallery_is_small():
    assert os.path.getsize(judge.GALLERY) < 1_000_000
