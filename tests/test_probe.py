"""The study's probe (probe.py): one linear classifier per factor on the raw pixels, trained on
real images of all eight compositions; a composition's reading is the product of its per-factor
accuracies."""
import numpy as np
import pytest
import torch

import data
import judge
import probe


@pytest.fixture(scope="module")
def real():
    return data.make_dataset(data.COMPOSITIONS, 100, seed=probe.HELD_OUT_SEED + 7)


def test_the_study_probe_reads_each_factor_of_real_images(real):
    """The paper's probe on held-out real images: >= 99% per factor, as the study's is."""
    images, bits, _ = real
    right = probe.load_probe().predict(images) == bits
    assert right.mean(0).min() >= 0.99, right.mean(0)


def test_the_study_probe_reads_raw_pixels_not_centred_ones(real):
    """A probe on raw pixels sees where the object is: moving every object by 3 pixels changes its
    logits; the factor reader, which centres each image first, gives the same ones and reads the
    moved images as it reads the others."""
    images, _, _ = real
    few = images[:20]
    moved = np.roll(few, 3, axis=2)
    study, reader = probe.load_probe(), judge.load_reader()
    with torch.no_grad():
        logits = study(probe.raw_pixels(images))
        assert np.array_equal(study.predict(images), logits.argmax(-1).numpy())
        assert (study(probe.raw_pixels(few)) - study(probe.raw_pixels(moved))).abs().max() > 0.1
        centred, centred_moved = judge.centred_pixels(few), judge.centred_pixels(moved)
        assert torch.allclose(reader(centred), reader(centred_moved), atol=1e-4)
    assert np.array_equal(reader.predict(few), reader.predict(moved))


def test_probe_accuracy_is_the_product_of_the_per_factor_accuracies():
    """Half the samples right on shape only, half right on colour only, size always right: no sample
    has all three right, yet the study's reading is 0.5 x 0.5 x 1 = 0.25."""
    right = np.array([[1, 0, 1], [0, 1, 1]] * 8, dtype=bool)
    assert probe.probe_accuracy(right) == pytest.approx(0.25)
    assert probe.probe_accuracy(np.ones((5, 3), bool)) == 1.0
    assert probe.probe_accuracy(np.array([[1, 1, 0]] * 4, bool)) == 0.0


def test_probe_accuracy_multiplies_factors_not_samples():
    """Four samples, each factor right on three of them: 0.75 ** 3, in any order. The share of
    samples with all three right (1/4) and the product of per-sample shares ((2/3) ** 3) differ."""
    right = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1], [1, 1, 1]], dtype=bool)
    assert probe.probe_accuracy(right) == pytest.approx(0.75 ** 3)
    assert probe.probe_accuracy(right[::-1]) == pytest.approx(0.75 ** 3)


def test_probe_trains_on_real_images_of_all_eight_compositions():
    """The contract: the probe is an evaluator, trained on real images of every composition,
    the unseen ones included."""
    images, targets, untrained = probe.start_training(probe.raw_pixels, n_per_code=3)
    codes = [data.bits_to_code(bits) for bits in targets.tolist()]
    assert sorted(codes) == sorted(data.COMPOSITIONS * 3)
    assert np.array_equal(judge.read_objects(images)["bits"], targets.numpy())   # drawn as labelled
    assert untrained.read is probe.raw_pixels


def test_probe_main_prints_each_factor_and_the_reading_per_composition(capsys):
    probe.main([])
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.split()[0] for row in rows] == list(data.COMPOSITIONS)
    for row in rows:
        assert all(float(cell.rstrip("%")) >= 99.0 for cell in row.split()[1:]), row
