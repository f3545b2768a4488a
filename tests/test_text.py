"""Language conditioning (--cond text, text-partial): the captions, the partial rule, the text
encoder, and the path from a caption to a generator's condition."""
import numpy as np
import pytest
import torch

import captions
import data
import scripts

TEXT_GENERATORS = ["dit.py", "maskgit.py"]


def words_of(ids):
    """Word ids (B, L) -> the captions as strings, padding left out."""
    return [" ".join(captions.VOCABULARY[i] for i in row if i) for row in ids.tolist()]


def latents_of(codes, n=1, seed=0):
    bits = np.repeat([data.code_to_bits(c) for c in codes], n, 0)
    return data.sample_latents(bits, np.random.default_rng(seed))


def test_data_captions_name_each_composition_in_english_order():
    ids, present = data.conditioning(latents_of(data.COMPOSITIONS), "text", train=False)
    assert words_of(ids) == ["a big red circle", "a small red circle", "a big blue circle",
                             "a small blue circle", "a big red triangle", "a small red triangle",
                             "a big blue triangle", "a small blue triangle"]
    assert torch.equal(present, ids != 0) and present[:, :4].all() and not present[:, 4:].any()


def test_data_caption_words_carry_the_contracts_classes():
    """Whatever the phrasing, a caption names its composition's three classes, read off the
    latents as the contract defines them (and the text-partial ones only a subset of them)."""
    codes = data.COMPOSITIONS
    latents = latents_of(codes, n=40, seed=3)
    for mode in ("text", "text-partial"):
        ids, _ = data.conditioning(latents, mode, 0.3, torch.Generator().manual_seed(1))
        for caption, code in zip(words_of(ids), np.repeat(codes, 40)):
            said = set(caption.split())
            for factor, bit in enumerate(data.code_to_bits(code)):
                assert captions.WORDS[factor][1 - bit] not in said, (caption, code)
                if mode == "text":
                    assert captions.WORDS[factor][bit] in said, (caption, code)


def test_data_training_draws_every_phrasing_and_evaluation_the_first():
    latents = latents_of(["111"], n=300)
    ids, _ = data.conditioning(latents, "text", rng=torch.Generator().manual_seed(0))
    said = set(words_of(ids))
    assert said == {"a small blue triangle", "a blue triangle that is small",
                    "a small triangle in blue"}
    ids, _ = data.conditioning(latents, "text", train=False)
    assert set(words_of(ids)) == {"a small blue triangle"}


@pytest.mark.parametrize("drop_prob", [0.1, 0.4])
def test_data_text_partial_leaves_each_word_out_on_its_own_with_drop_prob(drop_prob):
    n = 6000
    latents = latents_of(["111"], n=n)
    ids, _ = data.conditioning(latents, "text-partial", drop_prob, torch.Generator().manual_seed(2))
    said = [set(caption.split()) for caption in words_of(ids)]
    left_out = np.array([[word not in s for word in ("triangle", "blue", "small")] for s in said])
    tolerance = 4 * np.sqrt(drop_prob * (1 - drop_prob) / n)
    assert np.abs(left_out.mean(0) - drop_prob).max() < tolerance          # each factor, p
    both = (left_out[:, 0] & left_out[:, 1]).mean()                        # independently: p^2
    assert abs(both - drop_prob ** 2) < 4 * np.sqrt(drop_prob ** 2 / n)
    assert all(("shape" in s) == (w[0]) for s, w in zip(said, left_out))  # "a small blue shape"


def test_data_text_partial_is_full_at_evaluation_and_text_never_drops():
    latents = latents_of(["111"], n=500)
    ids, _ = data.conditioning(latents, "text-partial", 0.5, train=False)
    assert set(words_of(ids)) == {"a small blue triangle"}
    ids, _ = data.conditioning(latents, "text", 0.5, torch.Generator().manual_seed(0))
    assert all({"small", "blue", "triangle"} <= set(c.split()) for c in words_of(ids))


def test_data_text_encoder_ignores_padding_and_reads_the_words():
    torch.manual_seed(0)
    encoder = captions.TextEncoder(32)
    ids, present = data.conditioning(latents_of(["111", "000"]), "text", train=False)
    full = encoder(ids, present)                                             # (2, 32), padded to 6
    assert full.shape == (2, 32)
    cut = encoder(ids[:, :4], present[:, :4])                               # the same words, no pad
    torch.testing.assert_close(full, cut)
    assert (full[0] - full[1]).abs().max() > 1e-3                            # the words matter


def test_data_text_encoder_reads_word_order():
    torch.manual_seed(0)
    encoder = captions.TextEncoder(32)
    ids, present = data.conditioning(latents_of(["111"]), "text", train=False)
    swapped = ids.clone()
    swapped[:, [1, 2]] = ids[:, [2, 1]]                                    # "a blue small triangle"
    assert (encoder(ids, present) - encoder(swapped, present)).abs().max() > 1e-4


@pytest.mark.parametrize("mode", ["text", "text-partial"])
@pytest.mark.parametrize("script", TEXT_GENERATORS)
def test_text_condition_reaches_the_generator_through_its_condition_embedding(script, mode):
    module = __import__(script[:-3])
    _, args = module.parse(["--cond", mode, "--depth", "1", "--width", "32", "--heads", "2"])
    model, _ = module.build(vars(args))
    assert isinstance(model.condition.text, captions.TextEncoder)
    assert not hasattr(model.condition, "project")                           # no factor vectors
    ids, present = data.conditioning(latents_of(["111", "000"]), mode, train=False)
    c = model.condition(ids, present)
    assert c.shape == (2, 32) and (c[0] - c[1]).abs().max() > 1e-4


@pytest.mark.parametrize("mode", ["text", "text-partial"])
@pytest.mark.parametrize("script", TEXT_GENERATORS)
def test_text_modes_train_and_evaluate_end_to_end(script, mode, tmp_path):
    printed = scripts.main(script, *scripts.ONCE, "--cond", mode, "--out", tmp_path / "run")
    assert "level-2" in printed
