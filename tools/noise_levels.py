"""Where along the noise levels a trained DiT errs: on images it trained on, on fresh ones, on `111`.

    python tools/noise_levels.py runs/dit-8k runs/study/dit-logitnormal-8k

For each run's checkpoint (its EMA weights, as sampling uses them): the mean squared error of
the predicted clean tokens, ||x0_hat - x_0||^2 per value, at fixed noise levels t, on 512
images of the training set, 512 fresh images of the same seen compositions and 512 images of
`111`, which the model never saw. Training error below fresh error is memorisation. The
25-step sampler's last call is at t = 0.04 and its output is that call's x0_hat, so the error
there is what the final image carries; few training draws of t near it (logit-normal) leave
it untrained.
"""
import argparse
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import data  # noqa: E402
import dit  # noqa: E402
from inside import load_trained  # noqa: E402

LEVELS = (0.02, 0.04, 0.1, 0.2, 0.4, 0.7, 0.96)


def image_sets(config, n):
    training, _, training_latents = data.training_set(config["train_per_comp"])
    fresh, _, fresh_latents = data.make_dataset(data.SEEN, n // len(data.SEEN), seed=2026)
    novel, _, novel_latents = data.make_dataset(["111"], n, seed=2026)
    return {"training": (training[:n], training_latents[:n]), "fresh seen": (fresh, fresh_latents),
            "fresh 111": (novel, novel_latents)}


@torch.no_grad()
def errors(run, n):
    step, config, _, model, tokens = load_trained(run)
    rows = {}
    for name, (images, latents) in image_sets(config, n).items():
        x_0 = tokens.encode(images).float()                                 # (N, T, C)
        values, present = data.conditioning(latents, config["cond"], train=False)
        generator = torch.Generator().manual_seed(0)                        # the same noise for every run
        rows[name] = []
        for level in LEVELS:
            t = torch.full((len(x_0),), level)
            eps = torch.randn(x_0.shape, generator=generator)
            x0_hat = model(dit.noisy(x_0, t, eps), t, values, present)
            rows[name].append(((x0_hat - x_0) ** 2).mean().item())
    return step, config["time_dist"], rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="DiT run folders with a ckpt.pt")
    parser.add_argument("--images", type=int, default=512, help="images in each of the three sets")
    args = parser.parse_args(argv)
    print("Mean squared error of x0_hat per value, x 10^-4:\n")
    print("| run | step | t drawn | images | " + " | ".join(f"t = {t}" for t in LEVELS) + " |")
    print("|" + "---|" * (4 + len(LEVELS)))
    for folder in args.runs:
        step, time_dist, rows = errors(folder, args.images)
        for name, values in rows.items():
            print(f"| `{folder}` | {step} | {time_dist} | {name} | " + " | ".join(f"{1e4 * v:.2f}" for v in values) + " |")


if __name__ == "__main__":
    main()
