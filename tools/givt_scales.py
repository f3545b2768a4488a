"""How wide GIVT's Gaussians are, against the scale floor: is the floor what keeps its samples speckled?

    python tools/givt_scales.py runs/givt runs/study/givt-cosine-5k

For each run's checkpoint (its EMA weights, as sampling uses them), on 512 fresh images of the
seen compositions and 512 of `111`: hide half of each image's tokens at random, and read the
scale sigma of each hidden token's most likely component, per token value. The table gives
quantiles of sigma in pixel units (tokens are 2 * pixel - 1, so sigma / 2), the share of
values within 10% of the floor (givt.SCALE_FLOOR), and the share of tokens with at least one
value whose sigma / 2 is above 8/255, among tokens that cross a shape's edge (their true values
spread) and among flat ones (background, or inside a shape). Sampling at temperature 1 adds
sigma * N(0, 1) to every value, so those tokens are the ones drawn speckled; a value at the
floor gets noise of about 1/255, which no one sees. Lowering the floor can only change the
values that sit at it. Pixel units and edges hold for the pixels tokenizer only (the default).
"""
import argparse
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import data  # noqa: E402
import givt  # noqa: E402
from inside import load_trained  # noqa: E402

QUANTILES = (0.5, 0.9, 0.95, 0.99)
VISIBLE = 8 / 255      # a pixel noise of sigma / 2 above this shows as speckle
EDGE = 0.05            # a token whose true 48 values spread more than this crosses an edge


@torch.no_grad()
def scales(run, n):
    """{image set: (sigma of the most likely component at the hidden tokens (M, C), whether each
    crosses an edge (M,))}, the step, the tokenizer."""
    step, config, _, model, tokens = load_trained(run)
    sets = {"fresh seen": data.make_dataset(data.SEEN, n // len(data.SEEN), seed=2026),
            "fresh 111": data.make_dataset(["111"], n, seed=2026)}
    found = {}
    for name, (images, _, latents) in sets.items():
        x = tokens.encode(images).float()                                   # (N, T, C)
        values, present = data.conditioning(latents, config["cond"], train=False)
        generator = torch.Generator().manual_seed(0)                        # the same masks for every run
        mask = torch.rand(x.shape[:2], generator=generator) < 0.5           # (N, T), half hidden
        log_weights, means, sigma = model(x, mask, values, present)         # sigma (N, T, K, C)
        k = log_weights.argmax(-1)[..., None, None].expand(-1, -1, 1, tokens.dim)
        found[name] = sigma.gather(2, k)[:, :, 0][mask], (x.std(-1) > EDGE)[mask]   # (M, C), (M,)
    return step, config["tokenizer"], found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="GIVT run folders with a ckpt.pt")
    parser.add_argument("--images", type=int, default=512, help="images in each of the two sets")
    args = parser.parse_args(argv)
    print(f"sigma / 2 of the most likely component at hidden token values, in levels of 1/255 "
          f"(the floor, {givt.SCALE_FLOOR}, is {givt.SCALE_FLOOR / 2 * 255:.2f}):\n")
    print("| run | step | tokenizer | images | " + " | ".join(f"q{int(100 * q)}" for q in QUANTILES)
          + " | values at the floor (%) | tokens drawn with visible noise: edge / flat (%) |")
    print("|" + "---|" * (6 + len(QUANTILES)))
    for folder in args.runs:
        step, tokenizer, found = scales(folder, args.images)
        for name, (sigma, edge) in found.items():
            levels = torch.quantile(sigma.flatten(), torch.tensor(QUANTILES)) / 2 * 255
            floor = 100 * (sigma < 1.1 * givt.SCALE_FLOOR).float().mean().item()
            visible = 100 * (sigma / 2 > VISIBLE).any(-1).float()
            print(f"| `{folder}` | {step} | {tokenizer} | {name} | " + " | ".join(f"{v:.1f}" for v in levels)
                  + f" | {floor:.1f} | {visible[edge].mean():.1f} / {visible[~edge].mean():.1f} |")


if __name__ == "__main__":
    main()
