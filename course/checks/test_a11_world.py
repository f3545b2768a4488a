"""A11, worlds/bars.py: a world of your own, written to data.py's interface.

The checks hold the interface, not bars' own numbers: change the bar into an object of your own
(its factors, colours, sizes) and they still say whether the world is one a generator can learn
and a reader can read. What they keep from Shapes2D: three binary factors, the codes "000" to
"111", and the split (seen 000 001 010 100, level-1 one flip away, level-2 111), which
course/check.py's run reads."""
import itertools

import numpy as np
import pytest
import torch

import data
import probe
from worlds import bars as W

pytestmark = pytest.mark.a11


def asked(n, codes=None):
    """n value indices of each code (of every code unless codes says), in code order."""
    return np.array([W.code_to_bits(c) for c in (codes or W.COMPOSITIONS) for _ in range(n)])


def flips(a, b):
    return sum(x != y for x, y in zip(a, b))


def test_the_splits_hold_out_what_they_say_and_training_set_holds_the_seen_codes_alone():
    split = {code: name for name, codes in W.SPLITS.items() for code in codes}
    every = ["".join(map(str, v)) for v in itertools.product(*(range(len(x)) for x in W.VALUES))]
    assert sorted(W.COMPOSITIONS) == every and sorted(split) == every, \
        f"COMPOSITIONS and SPLITS must hold every combination of the factors' values once: " \
        f"{len(every)} codes"
    seen = [W.code_to_bits(c) for c in W.SPLITS["seen"]]
    for factor, values in enumerate(W.VALUES):
        shown = {bits[factor] for bits in seen}
        assert shown == set(range(len(values))), \
            f"every value of {W.FACTORS[factor]} must be seen: only {sorted(shown)} are"
    for code in W.SPLITS["level1"] + W.SPLITS["level2"]:
        nearest = min(flips(W.code_to_bits(code), bits) for bits in seen)
        want = 1 if code in W.SPLITS["level1"] else 2
        assert nearest >= want and (want == 2 or nearest == 1), \
            f"{code!r} ({split[code]}) is {nearest} flip(s) from the nearest seen code"
    images, bits, latents = W.training_set(30, seed=3)
    codes = [W.bits_to_code(b) for b in bits]
    counts = {code: codes.count(code) for code in set(codes)}
    assert counts == {code: 30 for code in W.SPLITS["seen"]}, \
        f"training_set(30) must hold 30 images of each seen code and nothing else; got {counts}"
    assert np.array_equal(np.asarray(W.class_bits(torch.as_tensor(latents))), bits), \
        "training_set's latents must render the bits it returns"
    assert np.array_equal(W.render(latents), images), \
        "training_set's images must be its latents' renders"
    assert np.array_equal(W.training_set(30, seed=3)[0], images), \
        "training_set must be deterministic"


def test_sample_latents_draws_the_asked_values_and_class_bits_reads_them_back():
    for code in W.COMPOSITIONS:
        assert W.bits_to_code(W.code_to_bits(code)) == code, \
            f"{code!r} does not survive a round trip"
        assert code in W.SPLITS.get(W.split_of(code), ()), f"split_of({code!r}) is not its split"
    with pytest.raises(ValueError, match="'222'"):
        W.split_of("222")
    bits = asked(40)
    latents = W.sample_latents(bits, np.random.default_rng(0))
    assert latents.ndim == 2 and len(latents) == len(bits) and latents.dtype == np.float32, \
        f"expected float32 latents (N, L) with N = {len(bits)}, got {latents.dtype} " \
        f"{tuple(latents.shape)}"
    again = W.sample_latents(bits, np.random.default_rng(0))
    assert np.array_equal(latents, again), "the same rng seed must draw the same latents"
    assert not np.array_equal(latents, W.sample_latents(bits, np.random.default_rng(1))), \
        "another seed must draw other latents (jitter within each class)"
    back = np.asarray(W.class_bits(torch.as_tensor(latents)))
    wrong = sorted({W.bits_to_code(b) for b, r in zip(bits, back) if tuple(b) != tuple(r)})
    assert not wrong, f"class_bits does not read back the values asked for codes {wrong}"


def test_render_draws_each_composition_as_the_reading_reads_it():
    bits = asked(25)
    latents = W.sample_latents(bits, np.random.default_rng(2))
    images = W.render(latents)
    size = W.IMAGE_SIZE
    assert images.shape == (len(bits), size, size, 3) and images.dtype == np.float32, \
        f"expected float32 images {(len(bits), size, size, 3)}, got {images.dtype} {images.shape}"
    assert images.min() >= 0 and images.max() <= 1, \
        f"pixels must lie in [0, 1]: found {images.min():.3f} to {images.max():.3f}"
    assert np.array_equal(W.render(latents), images), "render must be deterministic in latents"
    composed = W.readings(images, bits)["composed"]
    for code in W.COMPOSITIONS:
        share = composed[(bits == W.code_to_bits(code)).all(1)].mean()
        assert share >= 0.95, \
            f"{code!r} ({W.describe(code)}): the reading finds {100 * share:.0f}% of its renders " \
            "one legible object of the asked values (want 95% or more)"


def test_the_probe_reads_real_renders_of_the_world():
    torch.manual_seed(0)
    images, bits, _ = W.make_dataset(W.COMPOSITIONS, 40, seed=4)
    reader = probe.LinearProbe(classes=probe.classes_of(W), dim=W.IMAGE_SIZE ** 2 * 3)
    inputs, targets = probe.raw_pixels(images), torch.as_tensor(bits)
    optimizer = torch.optim.Adam(reader.parameters(), lr=1e-2)
    for _ in range(50):
        optimizer.zero_grad()
        probe.factor_loss(reader, inputs, targets).backward()
        optimizer.step()
    held_images, held_bits, _ = W.make_dataset(W.COMPOSITIONS, 40, seed=5)
    right = (reader.predict(held_images) == held_bits).mean(0)
    for factor, share in zip(W.FACTORS, right):
        assert share >= 0.95, \
            f"a linear probe reads {W.FACTORS} of held-out real renders; {factor} only " \
            f"{100 * share:.0f}% (want 95%): do two values of {factor} look alike?"


def test_a_generator_learns_from_the_seen_compositions():
    import dit
    _, args = dit.parse(["--world", "bars", "--width", "32", "--depth", "1", "--heads", "2",
                         "--out", "unused-run-folder"])
    model, tokenizer = dit.build(vars(args))
    training = data.TrainingData("fixed", 64, "continuous", 0.0, tokenizer.encode, "cpu", W)
    rng = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses = []
    for _ in range(60):
        tokens, values, present = training.batch(32, rng)
        loss = dit.flow_loss(model, tokens, values, present, rng)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    first, last = np.mean(losses[:10]), np.mean(losses[-10:])
    assert np.isfinite(losses).all() and last < 0.5 * first, \
        f"a small DiT trained 60 steps on the world: loss {first:.3f} at first, {last:.3f} at " \
        "the end (want it halved): are the images in [0, 1], and the latents in range?"
