"""Each generator learns something real: trained a few hundred steps on two seen compositions
that differ in colour alone (a red big circle, a blue big circle) with a small backbone (width
64, depth 2), it draws the one asked for: legibly, as the judge reads it, and in the colour the
condition names. A broken loss or sampler fails the first; a model that ignores its condition
draws either colour for either ask and fails the second; a test of shapes fails neither.

The cases train in two processes at once, one per core (each on one thread): half here, half
in a second Python started beside (BESIDE); the same seeds, steps and samples either way."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import data
import dit
import givt
import judge
import mar
import maskgit
import tokenizers

BATCH, WIDTH, DEPTH = 16, 64, 2
IMAGES, BITS, LATENTS = data.make_dataset(["000", "010"], 128, seed=3)
ASKED = np.repeat([[0, 0, 0], [0, 1, 0]], 8, 0)                          # 8 samples of each


def train_and_sample(model, loss, sample, steps, generator, lr=2e-3):
    """AdamW on batches of the two compositions, then 8 samples of each (conditioned on new
    latents)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    for _ in range(steps):
        index = torch.randint(len(IMAGES), (BATCH,), generator=generator)
        values, present = data.conditioning(LATENTS[index.numpy()], "continuous", train=False)
        optimizer.zero_grad()
        loss(model, index, values, present).backward()
        optimizer.step()
    latents = data.sample_latents(ASKED, np.random.default_rng(4))
    values, present = data.conditioning(latents, "continuous", train=False)
    with torch.no_grad():
        return sample(model.eval(), values, present), ASKED


PIXELS = tokenizers.ContinuousTokenizer("pixels")
TOKENS = PIXELS.encode(IMAGES).float()                                      # (N, 64, 48) in [-1, 1]
CODEBOOK = tokenizers.load_tokenizer("codebook")
IDS = CODEBOOK.encode(IMAGES)                                               # (N, 64)
# model, loss on a batch, sampler -> images, training steps, the reading that must reach 50%.
# Steps leave a margin over seeds and machines: MaskGIT at 300 steps read 0-50% on one
# machine's CPU (it had passed on another); at 800 it reads 81-94% over seeds 0-4 there.
# GIVT at this size and budget draws scattered patches (400 and 800 steps, 10 or 32 decoding
# steps, at temperature 1 or 0): no drawing to read. Its check is the density it learns instead
# (test_givt_learns_the_density_its_condition_asks_for, below).
CASES = {
    "dit": (lambda: dit.DiT(48, WIDTH, DEPTH),
            lambda m, i, v, p, g: dit.flow_loss(m, TOKENS[i], v, p, g),
            lambda m, v, p, g: PIXELS.decode(dit.sample(m, v, p, 48, 25, g)).clip(0, 1), 800,
            "composed"),
    "maskgit": (lambda: maskgit.MaskGIT(CODEBOOK.vocab_size, WIDTH, DEPTH),
                lambda m, i, v, p, g: maskgit.masked_loss(m, IDS[i], v, p, g),
                lambda m, v, p, g: CODEBOOK.decode(maskgit.sample(m, v, p, 10, g)), 800,
                "composed"),
    "mar": (lambda: mar.MAR(48, WIDTH, DEPTH),
            lambda m, i, v, p, g: mar.masked_loss(m, TOKENS[i], v, p, g),
            lambda m, v, p, g: PIXELS.decode(mar.sample(m, v, p, 48, 10, g)).clip(0, 1), 600,
            "composed"),
}


def colour_follows(images, bits):
    """Per sample: its bright pixels (> 0.4) are, on average, of the asked colour (more blue than
    red for blue; GIVT's pixels are speckled, so their mean, not each pixel, is read)."""
    bright = np.asarray(images).max(-1) > 0.4
    blue = np.array([image[b][:, 2].mean() > image[b][:, 0].mean() if b.any() else -1
                     for image, b in zip(images, bright)])
    return blue == bits[:, 1]


def draw(name):
    """Train case `name` from seed 0 and draw its 16 samples: (images, bits)."""
    make, loss, sample, steps, _ = CASES[name]
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    images, bits = train_and_sample(make(), lambda m, i, v, p: loss(m, i, v, p, generator),
                                    lambda m, v, p: sample(m, v, p, generator), steps, generator)
    return np.asarray(images), np.asarray(bits)


BESIDE = ("mar", "givt")         # about half the training time: maskgit and dit here, these beside
DRAW_BESIDE = """
import sys
import numpy as np
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import test_learning
for name in sys.argv[4:]:
    np.savez(f"{sys.argv[3]}/{name}.npz",
             *(test_learning.givt_densities(),) if name == "givt" else test_learning.draw(name))
"""


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """name -> (images, bits) of every case, and givt's densities; or what went wrong in drawing
    it."""
    folder = tmp_path_factory.mktemp("learning")
    here = os.path.dirname(os.path.abspath(__file__))
    results = {}
    with open(folder / "stderr", "w+") as stderr:
        process = subprocess.Popen([sys.executable, "-c", DRAW_BESIDE, os.path.dirname(here), here,
                                    str(folder), *BESIDE], stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            for name in CASES:
                if name not in BESIDE:
                    try:
                        results[name] = draw(name)
                    except Exception as error:                     # that case's test fails with it
                        results[name] = error
            process.wait(timeout=1200)
        finally:
            process.kill()                                 # if it is still running, something broke
            process.wait()
        stderr.seek(0)
        said = stderr.read()
    for name in BESIDE:
        path = folder / f"{name}.npz"
        if path.exists():
            saved = np.load(path)
            results[name] = tuple(saved[key] for key in saved.files)
        else:
            results[name] = (f"the second process drew no {name} (exit {process.returncode}):\n"
                             f"{said[-3000:]}")
    return results


@pytest.mark.parametrize("name", list(CASES))
def test_a_small_generator_draws_the_composition_it_is_asked_for(name, drawn):
    *_, steps, reading = CASES[name]
    if isinstance(drawn[name], Exception):
        raise drawn[name]
    if isinstance(drawn[name], str):
        pytest.fail(drawn[name])
    images, bits = drawn[name]
    right = judge.readings(images, bits)[reading]
    assert right.mean() >= 0.5, (
        f"{name}: {reading} {100 * right.mean():.0f}% of 16 samples after {steps} steps")
    follows = colour_follows(images, bits)
    assert follows.mean() >= 0.8, (
        f"{name}: {100 * follows.mean():.0f}% of 16 samples in the asked colour")


def givt_densities():
    """GIVT's test, trained here or beside: [before, under the right condition, under the other
    colour's] of the nll per value on the object tokens of held-out red and blue big circles."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    model = givt.GIVT(48, 8, WIDTH, DEPTH)
    images, bits, latents = data.make_dataset(["000", "010"], 32, seed=9)
    x = PIXELS.encode(images).float()
    hidden = torch.ones(len(x), 64, dtype=torch.bool)              # every token: only the condition
    bright = images.max(-1, keepdims=True) > 0.3
    on_object = torch.as_tensor(tokenizers.patchify(bright, 4).any(-1))                    # (N, 64)
    red, blue = np.flatnonzero(bits[:, 1] == 0), np.flatnonzero(bits[:, 1] == 1)    # 32 of each
    swapped = latents.copy()
    # each asks the other colour
    swapped[red, 1:4], swapped[blue, 1:4] = latents[blue, 1:4], latents[red, 1:4]

    def nll(condition_latents):
        values, present = data.conditioning(condition_latents, "continuous", train=False)
        with torch.no_grad():
            log_weights, means, scales = model.eval()(x, hidden, values, present)
        return -givt.log_density(x[on_object], log_weights[on_object], means[on_object],
                                 scales[on_object]).mean().item() / 48

    before = nll(latents)
    train_and_sample(model.train(),
                     lambda m, i, v, p: givt.masked_loss(m, TOKENS[i], v, p, generator),
                     lambda m, v, p: None, 800, generator)
    return np.array([before, nll(latents), nll(swapped)])


def test_givt_learns_the_density_its_condition_asks_for(drawn):
    """After 800 steps, the object tokens of held-out red and blue big circles, every token hidden
    (so that only the condition can tell the colour), are likelier under their own condition than
    under the other colour's, and likelier than at the start."""
    if isinstance(drawn["givt"], str):
        pytest.fail(drawn["givt"])
    before, right, wrong = drawn["givt"][0]
    assert right < before - 0.3, (
        f"GIVT's nll per value on the object {before:.2f} -> {right:.2f} in 800 steps")
    assert right < wrong - 0.5, (
        f"under the right colour's condition {right:.3f}, the other's {wrong:.3f}")
