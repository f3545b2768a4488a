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

PROBE_SEED = 12345         # the real images a probe trains on, and its initial weights
HELD_OUT_SEED = 54321      # real images no probe and no generator trains on


def raw_pixels(images):
    """The study's probe reads the image as it is: flattened pixels in [0, 1], not centred."""
    return torch.as_tensor(np.asarray(images, dtype=np.float32)).flatten(1)   # (N, H*W*3)


class LinearProbe(torch.nn.Module):
    """One linear softmax classifier per factor (2 logits each) on a fixed feature map, `read`:
    images (N, H, W, 3) -> features (N, dim)."""

    def __init__(self, read=raw_pixels, dim=data.IMAGE_SIZE ** 2 * 3):
        super().__init__()
        self.read = read
        self.heads = torch.nn.Linear(dim, 2 * len(data.FACTORS))

    def forward(self, inputs):
        return self.heads(inputs).view(len(inputs), len(data.FACTORS), 2)    # (N, 3, 2)

    def predict(self, images):
        with torch.no_grad():
            return self(self.read(images)).argmax(-1).numpy()               # (N, 3) bits


def start_training(read, n_per_code=1000, seed=PROBE_SEED):
    """What a probe trains on and from: real images of all eight compositions (N, H, W, 3),
    their bits (N, 3) and an untrained probe on the feature map `read`, its weights drawn from
    the seed."""
    images, bits, _ = data.make_dataset(data.COMPOSITIONS, n_per_code, seed)
    torch.manual_seed(seed)
    return images, torch.as_tensor(bits), LinearProbe(read)


def factor_loss(probe, inputs, targets):
    """Cross-entropy of the three factors' logits (N, 3, 2) against the bits (N, 3), averaged."""
    return torch.nn.functional.cross_entropy(probe(inputs).flatten(0, 1), targets.flatten())


def train_probe(n_per_code=1000, seed=PROBE_SEED):
    """The study's recipe: Adam (lr 1e-3), 200 epochs of shuffled batches of 128 clean images."""
    images, targets, probe = start_training(raw_pixels, n_per_code, seed)
    inputs, shuffle = raw_pixels(images), torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(probe.parameters(), lr=1e-3)
    for _ in range(200):
        for batch in torch.randperm(len(inputs), generator=shuffle).split(128):
            optimizer.zero_grad()
            factor_loss(probe, inputs[batch], targets[batch]).backward()
            optimizer.step()
    return probe


def cached(name, read, train):
    """A probe on the feature map `read`, trained once by train() and cached under .cache/ as
    `name` (the file's key changes when the world's definition does)."""
    path = data.cache_path(name)
    probe = LinearProbe(read)
    if os.path.exists(path):
        probe.load_state_dict(torch.load(path, weights_only=True))
        return probe
    probe = train()
    data.save_to_cache(probe.state_dict(), path)
    return probe


def load_probe():
    """The study's probe, trained once and cached."""
    return cached("probe-study", raw_pixels, train_probe)


def probe_accuracy(probe_factors):
    """The study's probe reading of one composition's samples: the product over the three factors
    of the share of samples whose factor it reads right (N, 3) -> a number in [0, 1]."""
    return float(np.prod(np.asarray(probe_factors, dtype=np.float64).mean(0)))


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description="The study's probe on held-out real images (250 "
                                     "of each composition): each factor's accuracy and probe_acc. "
                                     "The judge's three readings: python judge.py.")
    parser.parse_args(argv)
    images, bits, _ = data.make_dataset(data.COMPOSITIONS, 250, HELD_OUT_SEED)
    right = load_probe().predict(images) == bits                             # (N, 3)
    codes = np.array([data.bits_to_code(b) for b in bits])
    print(f"{'code':>5}" + "".join(f"{factor:>8}" for factor in data.FACTORS)
          + f"{'probe_acc':>11}")
    for code in data.COMPOSITIONS:
        mine = right[codes == code]
        print(f"{code:>5}" + "".join(f"{100 * share:7.1f}%" for share in mine.mean(0))
              + f"{100 * probe_accuracy(mine):10.1f}%")


if __name__ == "__main__":
    main()
