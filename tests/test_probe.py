"""The judge on real images: its three readings, the probe, and agreement with a person."""
import os
import re

import numpy as np
import pytest
import torch

import data
import probe


@pytest.fixture(scope="module")
def real():
    return data.make_dataset(data.COMPOSITIONS, 100, seed=probe.HELD_OUT_SEED + 7)


def test_all_three_readings_pass_real_images(real):
    images, bits, _ = real
    result = probe.evaluate(images, bits)
    for reading in ("acc", "fidelity", "probe_acc"):
        assert min(result[reading].values()) >= 0.99, (reading, result[reading])
    assert result["malformed"] <= 0.01
    assert result["seen"] >= 0.99 and result["level1"] >= 0.99 and result["level2"] >= 0.99
    assert result["retrieval_1nn"] >= 0.95


def test_judge_on_noisy_images(real):
    images, bits, _ = real
    noisy = np.clip(images + np.random.default_rng(1).normal(0, 0.05, images.shape), 0, 1)
    result = probe.evaluate(noisy, bits)
    assert min(result["acc"].values()) >= 0.95, result["acc"]
    assert min(result["fidelity"].values()) >= 0.95, result["fidelity"]


def test_judge_accepts_uint8_images(real):
    images, bits, _ = real
    as_uint8 = (images * 255).round().astype(np.uint8)
    assert min(probe.evaluate(as_uint8, bits)["acc"].values()) >= 0.99


def test_wrong_factors_are_scored_wrong_by_every_reading(real):
    images, bits, _ = real
    result = probe.evaluate(images, 1 - bits)
    for reading in ("acc", "fidelity", "probe_acc"):
        assert max(result[reading].values()) <= 0.01, reading


def test_each_factor_is_read_from_the_drawing(real):
    """Flip one asked bit at a time: the composition reading must notice every one."""
    images, bits, _ = real
    for factor in range(3):
        asked = bits.copy()
        asked[:, factor] ^= 1
        assert probe.readings(images, asked)["composed"].mean() <= 0.01, data.FACTORS[factor]


def test_the_factor_reader_reads_factors(real):
    images, bits, _ = real
    assert (probe.load_probe().predict(images) == bits).all(1).mean() >= 0.99


def test_the_study_probe_reads_each_factor_of_real_images(real):
    """The paper's probe on held-out real images: >= 99% per factor, as the study's is."""
    images, bits, _ = real
    right = probe.load_probe("study").predict(images) == bits
    assert right.mean(0).min() >= 0.99, right.mean(0)


def test_the_study_probe_reads_raw_pixels_not_centred_ones(real):
    """A probe on raw pixels sees where the object is: moving every object by 3 pixels changes its
    logits; the factor reader, which centres each image first, gives the same ones."""
    images, _, _ = real
    moved = np.roll(images[:20], 3, axis=2)
    study, reader = probe.load_probe("study"), probe.load_probe("reader")
    with torch.no_grad():
        assert np.array_equal(study.predict(images), study(probe.raw_pixels(images)).argmax(-1).numpy())
        assert (study(probe.raw_pixels(images[:20])) - study(probe.raw_pixels(moved))).abs().max() > 0.1
        assert torch.allclose(reader(probe.features(images[:20])), reader(probe.features(moved)), atol=1e-4)


def test_probe_accuracy_is_the_product_of_the_per_factor_accuracies():
    """Half the samples right on shape only, half right on colour only, size always right: no sample
    has all three right, yet the study's reading is 0.5 x 0.5 x 1 = 0.25."""
    right = np.array([[1, 0, 1], [0, 1, 1]] * 8, dtype=bool)
    assert probe.probe_accuracy(right) == pytest.approx(0.25)
    assert probe.probe_accuracy(np.ones((5, 3), bool)) == 1.0
    assert probe.probe_accuracy(np.array([[1, 1, 0]] * 4, bool)) == 0.0


def test_evaluate_reports_the_product_rule(real):
    """Ask for the right shape and size but the wrong colour on half of 000's images: the study's
    probe then reads colour right on half of them, so probe_acc is about 0.5, not the share with
    all three right of the other readings' kind."""
    images, bits, _ = real
    keep = (bits == [0, 0, 0]).all(1)
    asked = bits[keep].copy()
    asked[::2, 1] = 1                                              # colour wrong on every other one
    result = probe.evaluate(images[keep], asked)
    by_hand = probe.load_probe("study").predict(images[keep]) == asked
    assert set(result["probe_acc"]) == {"000", "010"}
    assert result["probe_acc"]["000"] == pytest.approx(probe.probe_accuracy(by_hand[(asked == [0, 0, 0]).all(1)]))


def test_a_wobbly_triangle_is_composed_but_not_precise():
    """The case that started it: an outline off by about a pixel all round."""
    import calibration
    accepted, _, bits = calibration.calibration_images(60, seed=5)
    wobbly = accepted["boundary jitter (up to 1 px)"]
    judged = probe.readings(wobbly, bits)
    assert judged["composed"].mean() >= 0.95
    assert judged["precise"].mean() <= 0.5          # the tight test rejects many of them


def test_split_means():
    means = probe.split_means({"000": 1.0, "001": 0.5, "011": 0.25, "111": 0.0})
    assert means == {"seen": 0.75, "level1": 0.25, "level2": 0.0}


def test_the_judge_agrees_with_a_person_on_the_gallery():
    """tests/gallery.npz: model samples of every generator, early and late, labelled by eye
    (GIVT twice: seed 0 and, labelled after the judge's last change and before it was run on
    them, seed 1). The mark the judge was built for is 95%; it reaches about 90% (GIVT's ragged
    drawings, which a person accepts and the judge does not, are most of the gap: README,
    "The judge"). This holds it to what it reaches, overall and per model, so that a change
    cannot make it worse."""
    gallery = np.load(probe.GALLERY)
    assert len(gallery["labels"]) >= 480 and set(gallery["labels"].tolist()) <= {0, 1, 2}
    models = np.array([re.sub(r"-seed\d+$", "", str(s).split(" step")[0]) for s in gallery["sources"]])
    assert set(models) == {"dit", "givt", "jepa_maskgit", "mar", "maskgit"}    # every model
    agreement, confusion = probe.gallery_agreement()
    assert confusion.sum() == len(gallery["labels"])
    assert agreement >= 0.89, f"agreement {agreement:.3f}\n{confusion}"
    judged = probe.verdicts(gallery["images"], gallery["factors"])
    for model in set(models):
        mine = models == model
        assert (judged[mine] == gallery["labels"][mine]).mean() >= 0.75, model


def test_gallery_is_small():
    assert os.path.getsize(probe.GALLERY) < 1_000_000
