"""The study's linear probe: one linear classifier per factor (shape, colour, size) on the raw
flattened pixels, trained on real images of all eight compositions. A composition's reading,
probe_acc, is the PRODUCT of its three per-factor accuracies over its samples, as the study's
code computes it, not the share of samples with all three factors right. It reads pixels, not
drawings: it credits fragments and chimeras. judge.py holds the stricter readings and uses the
linear classifier, its training set and its cache below for its own factor reader.

`python probe.py` prints the probe's reading of held-out real images.
"""
import os

import numpy as np
import torch

import data
import worlds

PROBE_SEED = 12345         # the real images a probe trains on, and its initial weights
RECIPE = dict(lr=1e-3, epochs=200, batch_size=128)      # the study's: Adam, shuffled batches
HELD_OUT_SEED = 54321      # real images no probe and no generator trains on


def raw_pixels(images):
    """The study's probe reads the image as it is: flattened pixels in [0, 1], not centred."""
    return torch.as_tensor(np.asarray(images, dtype=np.float32)).flatten(1)   # (N, H*W*3)


class LinearProbe(torch.nn.Module):
    """One linear softmax classifier per factor (one logit a value) on a fixed feature map, `read`:
    images (N, H, W, 3) -> features (N, dim). `classes`: the number of values of each factor
    (Shapes2D's three bits by default)."""

    def __init__(self, read=raw_pixels, dim=data.IMAGE_SIZE ** 2 * 3, classes=(2, 2, 2)):
        super().__init__()
        self.read, self.classes = read, tuple(classes)
        self.heads = torch.nn.Linear(dim, sum(self.classes))

    def forward(self, inputs):
        """Logits (N, F, C), C the most values of a factor; a factor with fewer has -inf logits
        for the values it lacks (no probability, no gradient)."""
        logits = self.heads(inputs)
        if len(set(self.classes)) == 1:
            return logits.view(len(inputs), len(self.classes), self.classes[0])    # (N, 3, 2)
        padded = logits.new_full((len(inputs), len(self.classes), max(self.classes)), -torch.inf)
        for f, part in enumerate(logits.split(self.classes, 1)):
            padded[:, f, :part.shape[1]] = part
        return padded

    def predict(self, images):
        with torch.no_grad():
            return self(self.read(images)).argmax(-1).numpy()               # (N, 3) bits


def start_training(read, n_per_code=1000, seed=PROBE_SEED, world=data):
    """What a probe trains on and from: real images of all the world's compositions (N, H, W, 3),
    their value indices (N, F) and an untrained probe on the feature map `read`, its weights drawn
    from the seed."""
    images, bits, _ = world.make_dataset(world.COMPOSITIONS, n_per_code, seed)
    torch.manual_seed(seed)
    return images, torch.as_tensor(bits), LinearProbe(read, classes=classes_of(world))


def classes_of(world):
    """The number of values of each factor of the world: (2, 2, 2) for Shapes2D."""
    return tuple(len(values) for values in world.VALUES)


def factor_loss(probe, inputs, targets):
    """Cross-entropy of the factors' logits (N, F, C) against the value indices (N, F),
    averaged."""
    return torch.nn.functional.cross_entropy(probe(inputs).flatten(0, 1), targets.flatten())


def train_probe(n_per_code=None, seed=PROBE_SEED, world=data):
    """The study's recipe: Adam (lr 1e-3), 200 epochs of shuffled batches of 128 clean images,
    world.PROBE_PER_CODE of each composition unless n_per_code says."""
    n_per_code = n_per_code or world.PROBE_PER_CODE
    images, targets, probe = start_training(raw_pixels, n_per_code, seed, world)
    inputs, shuffle = raw_pixels(images), torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(probe.parameters(), lr=RECIPE["lr"])
    for _ in range(RECIPE["epochs"]):
        for batch in torch.randperm(len(inputs), generator=shuffle).split(RECIPE["batch_size"]):
            optimizer.zero_grad()
            factor_loss(probe, inputs[batch], targets[batch]).backward()
            optimizer.step()
    return probe


def cached(name, read, train, world=data, recipe=()):
    """A probe on the feature map `read`, trained once by train() and cached under .cache/ as
    `name`. The file's key changes with all that decides its weights: the world and its
    definition, PROBE_PER_CODE, PROBE_SEED and the training's recipe (its settings, sorted)."""
    path = data.cache_path(name, (world.PROBE_PER_CODE, PROBE_SEED, tuple(recipe)), world)
    probe = LinearProbe(read, classes=classes_of(world))
    if os.path.exists(path):
        probe.load_state_dict(torch.load(path, weights_only=True))
        return probe
    probe = train()
    data.save_to_cache(probe.state_dict(), path)
    return probe


def load_probe(world=data):
    """The study's probe of the world, trained once and cached."""
    return cached("probe-study", raw_pixels, lambda: train_probe(world=world), world,
                  sorted(RECIPE.items()))


def probe_accuracy(probe_factors):
    """The study's probe reading of one composition's samples: the product over the factors of the
    share of samples whose factor it reads right (N, F) -> a number in [0, 1]."""
    return float(np.prod(np.asarray(probe_factors, dtype=np.float64).mean(0)))


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description="The study's probe on held-out real images (250 "
                                     "of each composition): each factor's accuracy and probe_acc. "
                                     "The judge's three readings: python judge.py.")
    parser.add_argument("--world", default=data.NAME, choices=worlds.WORLDS)
    world = worlds.world(parser.parse_args(argv).world)
    images, bits, _ = world.make_dataset(world.COMPOSITIONS, world.HELD_OUT_PER_CODE, HELD_OUT_SEED)
    right = load_probe(world).predict(images) == bits                        # (N, F)
    codes = np.array([world.bits_to_code(b) for b in bits])
    widths = [max(8, len(factor) + 1) for factor in world.FACTORS]      # "direction" is 9 long
    print(f"{'code':>5}" + "".join(f"{f:>{w}}" for f, w in zip(world.FACTORS, widths))
          + f"{'probe_acc':>11}")
    for code in world.COMPOSITIONS:
        mine = right[codes == code]
        print(f"{code:>5}" + "".join(f"{100 * share:{w - 1}.1f}%"
                                     for share, w in zip(mine.mean(0), widths))
              + f"{100 * probe_accuracy(mine):10.1f}%")


if __name__ == "__main__":
    main()
