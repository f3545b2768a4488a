"""The judge on real images: its three readings, the probe, and agreement with a person."""
import os
import re

import numpy as np
import pytest

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


def test_probe_alone_reads_factors(real):
    images, bits, _ = real
    assert (probe.load_probe().predict(images) == bits).all(1).mean() >= 0.99


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
