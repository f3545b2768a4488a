import numpy as np
import pytest
import torch

import data
import judge
import tokenizers


def test_contract_codes_and_order():
    assert data.FACTORS == ("shape", "color", "size")
    assert data.COMPOSITIONS == ("000", "001", "010", "011", "100", "101", "110", "111")
    assert data.SEEN == ("000", "001", "010", "100")
    assert data.LEVEL1 == ("011", "101", "110") and data.LEVEL2 == ("111",)
    assert data.code_to_bits("110") == (1, 1, 0) and data.bits_to_code((1, 0, 1)) == "101"


def test_110_is_a_blue_big_triangle():
    latents = data.sample_latents([data.code_to_bits("110")] * 20, np.random.default_rng(0))
    image = data.render(latents)
    fitted, bad = judge.fit_world(image)
    assert (fitted[:, 0] == 1).all() and (bad == 0).all()                  # triangle
    assert (image[..., 2].sum((1, 2)) > 2 * image[..., 0].sum((1, 2))).all()  # blue
    assert (latents[:, 4] >= data.SIZE_RANGES[0, 0]).all()                    # big


def test_same_seed_same_images_bitwise():
    a = data.make_dataset(data.COMPOSITIONS, 20, seed=3)
    b = data.make_dataset(data.COMPOSITIONS, 20, seed=3)
    c = data.make_dataset(data.COMPOSITIONS, 20, seed=4)
    for x, y in zip(a, b):
        assert np.array_equal(x, y)
    assert not np.array_equal(a[0], c[0])


def test_images_shapes_and_ranges():
    images, bits, latents = data.make_dataset(data.COMPOSITIONS, 10, seed=0)
    assert images.shape == (80, 32, 32, 3) and images.dtype == np.float32
    assert images.min() >= 0 and images.max() <= 1
    assert bits.shape == (80, 3) and latents.shape == (80, 7)
    assert sorted(set(map(data.bits_to_code, bits))) == list(data.COMPOSITIONS)


def test_training_set_holds_seen_compositions_only():
    _, bits, _ = data.training_set(200, seed=0)
    assert {data.bits_to_code(b) for b in bits} == set(data.SEEN)


def latent_code(latents):
    """The composition a latent vector renders: shape bit, blue if B > R, small below 6.25 px."""
    return data.bits_to_code([int(latents[0] > 0.5), int(latents[3] > latents[1]),
                              int(latents[4] < 6.25)])


def told(values):
    """The latents (N, 7) a continuous condition states, back in the latents' units."""
    return values.numpy() * data.COND_SCALE + data.COND_CENTRE


def test_fixed_training_data_draws_from_the_rendered_set_with_each_images_condition():
    training = data.TrainingData("fixed", 50, "continuous", 0.0, torch.as_tensor)
    batch, values, present = training.batch(16, torch.Generator().manual_seed(0))
    assert batch.shape == (16, 32, 32, 3) and values.shape == (16, 7) and present.all()
    for image, latent in zip(batch.numpy(), told(values)):        # each image with its own latents
        assert np.allclose(image, data.render(latent[None])[0], atol=1e-4)
        assert any((image == row).all() for row in training.tokens.numpy())


def test_fresh_training_data_renders_new_seen_images_every_batch():
    training = data.TrainingData("fresh", 50, "continuous", 0.0, torch.as_tensor)
    rng = torch.Generator().manual_seed(0)
    first, values, _ = training.batch(256, rng)
    second, _, _ = training.batch(256, rng)
    assert first.shape == (256, 32, 32, 3) and not torch.equal(first, second)
    assert np.allclose(first.numpy(), data.render(told(values)), atol=1e-4)
    assert {latent_code(row) for row in told(values)} == set(data.SEEN)   # all four, only seen
    fresh = data.TrainingData("fresh", 50, "continuous", 0.0, torch.as_tensor)
    again, _, _ = fresh.batch(256, torch.Generator().manual_seed(0))
    assert torch.equal(first, again)                                # the rng decides: resumable
    with pytest.raises(ValueError, match="unknown training data 'infinite'"):
        data.TrainingData("infinite", 50, "continuous", 0.0, torch.as_tensor)


def test_training_data_draws_the_images_then_what_the_condition_hides():
    """The condition is the batch's own, in the asked mode: discrete hides the position in every
    image, dropout hides factors at about cond_drop."""
    rng = torch.Generator().manual_seed(0)
    _, _, present = data.TrainingData("fixed", 20, "discrete", 0.0, torch.as_tensor).batch(64, rng)
    assert not present[:, 3].any() and present[:, :3].all()
    _, _, present = data.TrainingData("fixed", 20, "dropout", 0.5, torch.as_tensor).batch(512, rng)
    assert abs(1 - present[:, :3].float().mean().item() - 0.5) < 0.05


@pytest.mark.parametrize("kind", [tokenizers.Codebook, tokenizers.PCATokenizer])
def test_tokenizer_fit_sees_only_seen_compositions(kind, monkeypatch):
    asked = []
    original = data.make_dataset

    def spy(codes, n_per_code, seed):
        asked.extend(codes)
        return original(codes, n_per_code, seed)

    monkeypatch.setattr(data, "make_dataset", spy)
    kind()
    assert asked and set(asked) <= set(data.SEEN)


def test_conditioning_modes():
    latents = data.sample_latents([[1, 1, 0], [1, 1, 0], [0, 0, 1]], np.random.default_rng(0))
    values, present = data.conditioning(latents, "continuous", train=True)
    assert present.all() and not torch.equal(values[0], values[1])         # exact values differ
    values, present = data.conditioning(latents, "discrete")
    assert torch.equal(values[0, :5], values[1, :5])                       # only the class survives
    assert not present[:, 3].any() and present[:, :3].all()                # position hidden
    generator = torch.Generator().manual_seed(0)
    many = np.repeat(latents, 500, 0)
    _, present = data.conditioning(many, "dropout", drop_prob=0.3, rng=generator)
    assert abs((~present[:, :3]).float().mean().item() - 0.3) < 0.03 and present[:, 3].all()
    _, present = data.conditioning(many, "dropout", drop_prob=0.3, train=False)
    assert present.all()                                                   # all factors at sampling
    _, present = data.conditioning(many, "discrete-dropout", drop_prob=0.3, rng=generator)
    assert (~present[:, :3]).any() and not present[:, 3].any()


def test_patchify_round_trip_numpy_and_torch():
    images = data.make_dataset(["000", "111"], 3, seed=0)[0]
    for patch in (4, 8):
        tokens = tokenizers.patchify(images, patch)
        assert tokens.shape == (6, (32 // patch) ** 2, patch * patch * 3)
        assert np.array_equal(tokenizers.unpatchify(tokens, patch), images)
        t = torch.as_tensor(images)
        assert torch.equal(tokenizers.unpatchify(tokenizers.patchify(t, patch), patch), t)
    # the first token is the top-left patch
    assert np.array_equal(tokenizers.patchify(images, 4)[0, 0], images[0, :4, :4].reshape(-1))


@pytest.mark.parametrize("name", ["codebook", "pca"])
def test_tokenizer_round_trip_keeps_every_composition(name):
    tokenizer = tokenizers.load_tokenizer(name)
    images, bits, _ = data.make_dataset(data.COMPOSITIONS, 100, seed=777)
    result = judge.evaluate(tokenizer.decode(tokenizer.encode(images)), bits)
    assert min(result["acc"].values()) >= 0.98, result["acc"]


def test_codebook_ids_in_range_and_cache_is_the_same_tokenizer():
    first = tokenizers.load_tokenizer("codebook")
    again = tokenizers.load_tokenizer("codebook")                                 # from .cache
    images = data.make_dataset(data.COMPOSITIONS, 5, seed=1)[0]
    ids = first.encode(images)
    assert ids.shape == (40, 64) and ids.dtype == torch.int64
    assert 0 <= ids.min() and ids.max() < first.vocab_size
    assert torch.equal(ids, again.encode(images))


def test_bad_input_names_the_choices():
    with pytest.raises(ValueError, match="'112'.*000, 001"):
        data.code_to_bits("112")
    with pytest.raises(ValueError,
                       match="'fuzzy'.*continuous, discrete, dropout, discrete-dropout"):
        data.conditioning(np.zeros((1, 7)), "fuzzy")
    with pytest.raises(ValueError, match="'vqgan'.*codebook, pca"):
        tokenizers.load_tokenizer("vqgan")


def test_dropout_hides_each_factor_on_its_own():
    """Each factor of each row is hidden independently: two given factors are both hidden about
    p^2 of the time (0.09 at p = 0.3), not p (one draw for the row)."""
    many = np.repeat(data.sample_latents([[1, 0, 1]], np.random.default_rng(0)), 20000, 0)
    _, present = data.conditioning(many, "dropout", drop_prob=0.3,
                                   rng=torch.Generator().manual_seed(0))
    hidden = ~present[:, :3]
    assert abs((hidden[:, 0] & hidden[:, 1]).float().mean().item() - 0.09) < 0.01
    assert abs(hidden.float().mean().item() - 0.3) < 0.01


def test_dropout_draws_from_the_runs_generator_alone():
    """The factors hidden are drawn by the generator handed in (the run's, saved for --resume): the
    same seed hides the same factors whatever the global random state, another seed others, and
    the global random state does not move."""
    many = np.repeat(data.sample_latents([[1, 0, 1]], np.random.default_rng(0)), 200, 0)
    hidden = []
    for global_seed, seed in ((0, 5), (1, 5), (0, 6)):
        torch.manual_seed(global_seed)
        state = torch.get_rng_state()
        for mode in ("dropout", "discrete-dropout"):
            _, present = data.conditioning(many, mode, drop_prob=0.3,
                                           rng=torch.Generator().manual_seed(seed))
            hidden.append(~present[:, :3])
        assert torch.equal(torch.get_rng_state(), state), "the global random state moved"
    assert torch.equal(hidden[0], hidden[2]) and torch.equal(hidden[1], hidden[3])
    assert not torch.equal(hidden[0], hidden[4]) and not torch.equal(hidden[1], hidden[5])


def test_the_codebook_reads_each_patch_as_its_nearest_mask_times_colour():
    """encode picks the (mask, colour) pair of least squared error, id = mask * colours + colour:
    no other pair is closer to the patch than the one it picked."""
    codebook = tokenizers.load_tokenizer("codebook")
    images = data.make_dataset(data.COMPOSITIONS, 2, seed=3)[0]
    ids = codebook.encode(images)
    patches = torch.as_tensor(tokenizers.patchify(images, 4)).float()            # (N, 64, 48)
    picked = ((codebook.vectors(ids) - patches) ** 2).sum(-1)
    every = (codebook.masks[:, None, :, None]
             * codebook.palette[None, :, None, :]).flatten(2)              # (M, C, 48)
    nearest = torch.cdist(patches.flatten(0, 1), every.flatten(0, 1)).min(-1).values
    best = nearest.view(picked.shape) ** 2
    assert torch.allclose(picked, best, atol=1e-3)
    mask_index, colour = ids // codebook.n_colors, ids % codebook.n_colors
    assert torch.allclose(codebook.vectors(ids),
                          (codebook.masks[mask_index][..., None]
                           * codebook.palette[colour][..., None, :]).flatten(2))


def test_data_discrete_condition_carries_each_factors_class_as_the_contract_defines_it():
    """CONTRACT.md: shape 0 circle, 1 triangle; colour 0 red, 1 blue; size 0 big, 1 small. Real
    latents of each composition, drawn from its code: the image shows the code's classes, and the
    discrete condition, read back in the latents' units, names the same ones. A bit inverted
    consistently (in code_to_bits, sample_latents or the condition) fails here."""
    rng = np.random.default_rng(0)
    areas = {}                                                          # size bit -> object areas
    for code in data.COMPOSITIONS:
        shape, color, size = (int(digit) for digit in code)             # the contract's bits
        latents = data.sample_latents([data.code_to_bits(code)] * 40, rng)
        images = data.render(latents)
        inside = images.max(-1) > 0.5                                   # (N, H, W) the object
        weight = images.max(-1) / images.max(-1).sum((1, 2), keepdims=True)
        rows = np.arange(data.IMAGE_SIZE, dtype=np.float64)[None, :, None]
        offset = rows - (weight * rows).sum((1, 2))[:, None, None]       # from the centre of mass
        skew = (weight * offset ** 3).sum((1, 2)) / (weight * offset ** 2).sum((1, 2)) ** 1.5
        assert ((abs(skew) < 0.25) == (shape == 0)).all(), code   # circle 0, triangle about 0.57
        mean_color = (images * inside[..., None]).sum((1, 2)) / inside.sum((1, 2))[:, None]
        assert ((mean_color[:, 0] > mean_color[:, 2]) == (color == 0)).all(), code   # red: R > B
        areas.setdefault(size, []).append(inside.sum((1, 2)))
        values, _ = data.conditioning(latents, "discrete", train=False)
        raw = values.numpy() * data.COND_SCALE + data.COND_CENTRE      # in the latents' units
        assert np.array_equal(raw[:, 0], np.full(len(raw), float(shape))), code
        assert ((raw[:, 1] > raw[:, 3]) == (color == 0)).all(), code
        assert (np.abs(raw[:, 4] - latents[:, 4]) < 1.0).all(), (code, raw[:, 4])   # its own class
    big, small = np.concatenate(areas[0]), np.concatenate(areas[1])       # pixels of the object
    assert big.min() > small.max(), (big.min(), small.max())
