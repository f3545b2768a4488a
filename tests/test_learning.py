"""Each generator learns something real: trained a few hundred steps on one seen composition
(a red big circle) with a small backbone, it draws that composition legibly, as the judge
reads it. A broken loss, sampler or conditioning path fails this; a test of shapes does not."""
import numpy as np
import pytest
import torch

import data
import dit
import givt
import mar
import maskgit
import probe

BATCH, WIDTH, DEPTH = 16, 64, 2
IMAGES, BITS, LATENTS = data.make_dataset(["000"], 256, seed=3)


def batches(generator, steps):
    for _ in range(steps):
        index = torch.randint(len(IMAGES), (BATCH,), generator=generator)
        values, present = data.conditioning(LATENTS[index.numpy()], "continuous", train=False)
        yield index, values, present


def fit(model, loss_of, generator, steps, lr=2e-3):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    for index, values, present in batches(generator, steps):
        loss = loss_of(index, values, present)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def asked(n=16):
    latents = data.sample_latents(BITS[:n], np.random.default_rng(4))
    return (*data.conditioning(latents, "continuous", train=False), BITS[:n])


def pixels():
    return dit.Tokens("pixels").encode(IMAGES).float()                    # (N, 64, 48) in [-1, 1]


def learn_dit(generator):
    tokens = pixels()
    model = dit.DiT(48, WIDTH, DEPTH)
    fit(model, lambda i, v, p: dit.flow_loss(model, tokens[i], v, p, generator), generator, steps=800)
    values, present, bits = asked()
    with torch.no_grad():
        x = dit.sample(model, values, present, 48, 25, generator)
    return dit.Tokens("pixels").decode(x).clip(0, 1), bits


def learn_maskgit(generator):
    codebook = data.load_tokenizer("codebook")
    ids = codebook.encode(IMAGES)
    model = maskgit.MaskGIT(codebook.vocab_size, WIDTH, DEPTH)
    fit(model, lambda i, v, p: maskgit.masked_loss(model, ids[i], v, p, generator), generator, steps=300)
    values, present, bits = asked()
    with torch.no_grad():
        drawn = maskgit.sample(model, values, present, 10, generator)
    return codebook.decode(drawn), bits


def learn_givt(generator):
    tokens = pixels()
    model = givt.GIVT(48, 8, WIDTH, DEPTH)
    fit(model, lambda i, v, p: givt.masked_loss(model, tokens[i], v, p, generator), generator, steps=800)
    values, present, bits = asked()
    with torch.no_grad():
        x = givt.sample(model, values, present, 48, 10, generator)
    return givt.Tokens("pixels").decode(x).clip(0, 1), bits


def learn_mar(generator):
    tokens = pixels()
    model = mar.MAR(48, WIDTH, DEPTH)
    fit(model, lambda i, v, p: mar.masked_loss(model, tokens[i], v, p, generator), generator, steps=600)
    values, present, bits = asked()
    with torch.no_grad():
        x = mar.sample(model, values, present, 48, 10, generator)
    return mar.Tokens("pixels").decode(x).clip(0, 1), bits


@pytest.mark.parametrize("learn", [learn_dit, learn_maskgit, learn_givt, learn_mar], ids=lambda f: f.__name__[6:])
def test_a_small_generator_draws_the_composition_it_was_trained_on(learn):
    torch.manual_seed(0)
    images, bits = learn(torch.Generator().manual_seed(0))
    composed = probe.readings(images, bits)["composed"]
    assert composed.mean() >= 0.5, f"{100 * composed.mean():.0f}% of 16 samples composed"
