"""Does CRA mean more in learned features? The study retrieves in V-JEPA2's features, learnt from
real video; clips.py retrieves in pooled pixels (frame 1 and the frame differences), which pass a
patchwork through. Here a small encoder learns the six classes from real clips of all of them, and
CRA's Hit@1 is read in both feature spaces: on the calibration's kinds a person accepts and
refuses, and on the novel clips of every kept run in results/clips.

    python tools/cra_features.py        # writes results/clips/cra_features.md (about 2 minutes)
"""
import argparse
import glob
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from worlds import clips  # noqa: E402

ENCODER_SEEDS = (777, 778, 779)   # each encoder's real clips, initial weights and batch order
RECIPE = dict(per_class=500, epochs=8, batch_size=64, lr=1e-3)
OUT = os.path.join(ROOT, "results", "clips", "cra_features.md")


def stacked(images):
    """Clips (N, 32, 32, 3) -> (N, 12, 16, 16): the four frames' RGB as channels, frame by frame."""
    frames = torch.as_tensor(clips.frames_of(np.asarray(images, np.float32)))  # (N, 4, 16, 16, 3)
    return frames.permute(0, 1, 4, 2, 3).flatten(1, 2)


class Encoder(nn.Module):
    """Two convolutions over the stacked frames, a 128-number feature, a linear head on six
    classes (the feature is what retrieval reads)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3 * clips.FRAMES, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 4 * 4, 128), nn.ReLU())
        self.head = nn.Linear(128, len(clips.COMPOSITIONS))

    def forward(self, x):
        return self.head(self.features(x))


def train_encoder(per_class, epochs, batch_size, lr, seed):
    """The encoder, trained to name the class of real clips of all six classes (cross-entropy)."""
    images, bits, _ = clips.make_dataset(clips.COMPOSITIONS, per_class, seed)
    x = stacked(images)
    y = torch.as_tensor([clips.COMPOSITIONS.index(clips.bits_to_code(b)) for b in bits])
    torch.manual_seed(seed)
    encoder, order = Encoder(), torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(encoder.parameters(), lr=lr)
    for _ in range(epochs):
        for batch in torch.randperm(len(x), generator=order).split(batch_size):
            optimizer.zero_grad()
            F.cross_entropy(encoder(x[batch]), y[batch]).backward()
            optimizer.step()
    return encoder.eval()


def encoded(encoder):
    """The encoder's feature map: clips (N, 32, 32, 3) -> unit-length features (N, 128)."""
    def read(images):
        with torch.no_grad():
            return F.normalize(encoder.features(stacked(images)), dim=1)
    return read


def nearest_class(features, reference, codes):
    """The class code of each clip's nearest reference clip (Euclidean, as clips.retrieve)."""
    return np.asarray(codes)[torch.cdist(features, reference).argmin(1).numpy()]


def report(learnt, n=100):
    """The page's lines: Hit@1 of each calibration kind, then of each kept run's novel clips (and
    the share hit though the composed reading refuses), in pooled pixels and in each learnt
    feature map of the list `learnt` (one an encoder, "a / b / c")."""
    real, bits, _ = clips.make_dataset(clips.COMPOSITIONS, clips.HELD_OUT_PER_CODE,
                                       clips.REFERENCE_SEED)
    codes = [clips.bits_to_code(b) for b in bits]
    spaces = [clips.features, *learnt]
    reference = [read(real) for read in spaces]

    def hits(images, asked):
        """Per feature map, pooled first: which clips land on the asked class, (N,) bool."""
        return [nearest_class(read(images), ref, codes) == asked
                for read, ref in zip(spaces, reference)]

    def cells(hit):
        """'pooled', then 'a / b / c' over the learnt maps: the shares in %."""
        shares = [f"{100 * h.mean():.1f}" for h in hit]
        return [shares[0], " / ".join(shares[1:])]
    accepted, rejected, asked = clips.calibration_images(n)
    asked = np.array([clips.bits_to_code(b) for b in asked])
    lines = ["| kind of clip | a person | Hit@1, pooled pixels | Hit@1, learnt features |",
             "|---|---|---|---|"]
    for verdict, kinds in (("accepts", accepted), ("refuses", rejected)):
        for kind, images in kinds.items():
            lines.append(f"| {kind} | {verdict} | "
                         + " | ".join(cells(hits(images.astype(np.float32), asked))) + " |")
    lines += ["", "| kept run | novel clips composed | hit, pooled | hit and refused, pooled "
              "| hit, learnt | hit and refused, learnt |", "|---|---|---|---|---|---|"]
    for path in sorted(glob.glob(os.path.join(ROOT, "results", "clips", "runs", "*",
                                              "samples.npz"))):
        kept = np.load(path)
        images, factors = np.asarray(kept["images"], np.float32) / 255, kept["factors"]
        wanted = np.array([clips.bits_to_code(b) for b in factors])
        novel = np.isin(wanted, clips.LEVEL1 + clips.LEVEL2)
        composed = clips.readings(images[novel], factors[novel])["composed"]
        hit = hits(images[novel], wanted[novel])
        (pooled, learnt), (pooled_refused, learnt_refused) = cells(hit), cells(
            [h & ~composed for h in hit])
        row = [f"{100 * composed.mean():.1f}", pooled, pooled_refused, learnt, learnt_refused]
        lines.append(f"| {os.path.basename(os.path.dirname(path))} | " + " | ".join(row) + " |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)                                   # the same numbers on any machine
    learnt = [encoded(train_encoder(**RECIPE, seed=seed)) for seed in ENCODER_SEEDS]
    head = [f"Rebuilt by `python tools/cra_features.py`: three encoders "
            f"({RECIPE['epochs']} epochs, {RECIPE['per_class']} real clips a class, seeds "
            f"{', '.join(map(str, ENCODER_SEEDS))}: learnt a / b / c) against `clips.features` "
            "(pooled); retrieval among clips.py's reference clips, Hit@1 in %.", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(head + report(learnt)) + "\n")
    print(open(args.out).read())


if __name__ == "__main__":
    main()
