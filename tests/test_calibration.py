"""The calibration suite defines 'legible': every kind a person accepts passes, every kind
a person rejects fails. Drawn with a seed of its own (the thresholds were set on seed 0)."""
import numpy as np
import pytest

from worlds import shapes2d_calibration as calibration
import judge

ACCEPTED, REJECTED, ASKED = calibration.calibration_images(300, seed=2)


@pytest.mark.parametrize("kind", list(ACCEPTED))
def test_accepted_kinds_are_composed(kind):
    composed = judge.readings(ACCEPTED[kind], ASKED)["composed"]
    assert composed.mean() >= 0.98, f"{kind}: {100 * composed.mean():.1f}% composed, want >= 98%"


@pytest.mark.parametrize("kind", list(REJECTED))
def test_rejected_kinds_are_not_legible(kind):
    judged = judge.readings(REJECTED[kind], ASKED)
    assert judged["legible"].mean() <= 0.03, (
        f"{kind}: {100 * judged['legible'].mean():.1f}% legible, want <= 3%")
    assert judged["composed"].mean() <= 0.03, f"{kind}: composed without being legible"


def test_the_suite_is_what_it_says():
    """The kinds differ from clean renderings (each perturbation did something), and the
    real kind is the world itself."""
    clean = ACCEPTED["real"]
    for kind, images in {**ACCEPTED, **REJECTED}.items():
        assert images.shape == clean.shape and images.dtype == np.float32, kind
        assert images.min() >= 0 and images.max() <= 1, kind
        if kind != "real":
            assert np.abs(images - clean).max() > 0.2, kind


def test_the_tight_test_is_stricter_than_legibility():
    """Fidelity rejects many drawings a person accepts: the two readings measure different
    things."""
    jitter = ACCEPTED["boundary jitter (up to 1 px)"]
    judged = judge.readings(jitter, ASKED)
    assert judged["precise"].mean() < judged["composed"].mean() - 0.3
