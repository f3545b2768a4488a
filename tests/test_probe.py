import json
import os

import numpy as np
import pytest

import data
import probe


@pytest.fixture(scope="module")
def real():
    return data.make_dataset(data.COMPOSITIONS, 100, seed=probe.HELD_OUT_SEED + 7)


def test_judge_on_real_images(real):
    images, bits, _ = real
    result = probe.evaluate(images, bits)
    assert min(result["acc"].values()) >= 0.99, result["acc"]
    assert result["malformed"] <= 0.01
    assert result["seen"] >= 0.99 and result["level1"] >= 0.99 and result["level2"] >= 0.99
    assert result["retrieval_1nn"] >= 0.95


def test_judge_on_noisy_images(real):
    images, bits, _ = real
    noisy = np.clip(images + np.random.default_rng(1).normal(0, 0.05, images.shape), 0, 1)
    result = probe.evaluate(noisy, bits)
    assert min(result["acc"].values()) >= 0.95, result["acc"]


def test_judge_accepts_uint8_images(real):
    images, bits, _ = real
    as_uint8 = (images * 255).round().astype(np.uint8)
    assert min(probe.evaluate(as_uint8, bits)["acc"].values()) >= 0.99


def test_judge_rejects_broken_images():
    for name, images in probe.broken_images(300, seed=0).items():
        assert probe.well_formed(images).mean() <= 0.05, name


def test_wrong_factors_are_scored_wrong(real):
    images, bits, _ = real
    assert max(probe.evaluate(images, 1 - bits)["acc"].values()) <= 0.01


def test_probe_alone_reads_factors(real):
    images, bits, _ = real
    assert (probe.load_probe().predict(images) == bits).all(1).mean() >= 0.99


def test_evaluation_steps_are_log_spaced_and_end_at_the_last_step():
    steps = sorted(probe.evaluation_steps(3000, 250))
    assert steps[0] == 250 and steps[-1] == 3000
    ratios = np.diff(np.log(steps[:-1]))
    assert np.allclose(ratios, np.log(2) / 2, atol=0.01)
    assert probe.evaluation_steps(5, 5) == {5}


def test_record_writes_the_run_files(tmp_path, real):
    images, bits, _ = real
    for step in (10, 20):
        metrics = probe.record(str(tmp_path), step, 0.5, images[:64], bits[:64], title="test")
    lines = [json.loads(l) for l in open(tmp_path / "metrics.jsonl")]
    assert [l["step"] for l in lines] == [10, 20]
    for key in ("step", "loss", "acc", "seen", "level1", "level2", "malformed"):
        assert key in lines[-1]
    saved = np.load(tmp_path / "samples.npz")
    assert saved["images"].dtype == np.uint8 and saved["images"].shape == (64, 32, 32, 3)
    assert saved["factors"].dtype == np.int64 and saved["factors"].shape == (64, 3)
    assert os.path.getsize(tmp_path / "samples.png") > 1000 and os.path.getsize(tmp_path / "curves.png") > 1000
    assert metrics == lines[-1]
