"""A8, tokenizers.py: Codebook.encode.

A small codebook (64 masks, 2 colours) keeps the checks fast. The nearest pair is checked
by brute force in float64 on a few hundred patches."""
import numpy as np
import pytest
import torch

import data
import tokenizers

pytestmark = pytest.mark.a8


@pytest.fixture(scope="module")
def codebook():
    return tokenizers.Codebook(n_masks=64, n_colors=2, seed=0)


@pytest.fixture(scope="module")
def images():
    return data.make_dataset(data.COMPOSITIONS, 4, seed=5)[0]       # all eight, novel ones included


def test_encode_gives_one_id_per_patch(codebook, images):
    ids = codebook.encode(images)
    assert ids.shape == (32, 64) and ids.dtype == torch.int64, \
        f"expected ids (32, 64) int64 (8 x 8 patches of 4 x 4 pixels), got {tuple(ids.shape)} " \
        f"{ids.dtype}"
    assert ids.min() >= 0 and ids.max() < codebook.vocab_size, \
        f"ids must lie in [0, {codebook.vocab_size})"
    assert torch.equal(codebook.encode(images[:5]), ids[:5]), \
        "a patch's id must not depend on the other images"
    assert torch.equal(codebook.encode(images, chunk=100), ids), \
        "the chunk size must not change the ids"


def test_each_id_is_the_nearest_mask_and_colour_pair(codebook, images):
    ids = codebook.encode(images[:6])
    patches = torch.as_tensor(tokenizers.patchify(images[:6], 4)).double()
    patches = patches.reshape(-1, 16, 3)                                    # (384, P, 3)
    candidates = (codebook.masks.double()[None, :, :, None]
                  * codebook.palette.double()[:, None, None, :])
    candidates = candidates.reshape(-1, 16, 3)                         # (C * M, P, 3), colour-major
    errors = ((patches[:, None] - candidates[None]) ** 2).sum((2, 3))        # (384, C * M)
    best = errors.min(1).values
    chosen = codebook.vectors(ids).double().reshape(-1, 16, 3)
    got = ((patches - chosen) ** 2).sum((1, 2))
    assert torch.allclose(got, best, atol=1e-4), \
        "each patch's id must be the (mask, colour) pair of least squared error; " \
        f"{(got > best + 1e-4).sum()} " \
        f"of {len(got)} patches got a worse one (id = mask_index * n_colors + colour_index)"


def test_the_round_trip_draws_the_seen_images_back(codebook):
    seen = data.make_dataset(["000", "001", "010", "100"], 8, seed=6)[0]
    back = codebook.decode(codebook.encode(seen))
    error = np.abs(back - seen).mean()
    assert error < 0.02, \
        f"decode(encode(x)) must be close to x for seen images: mean error {error:.4f}, " \
        "expected < 0.02"
