"""The lesson in one picture: each model of the ladder asked for a composition it has seen and
for the one it has not.

    python tools/lesson.py          # results/lesson.png, from results/ladder/runs/<model>/

For each model (seed 0) the picture shows its first samples asked for `100` (red big triangle,
seen in training) beside its first samples asked for `111` (blue small triangle, never seen),
from the run's final samples (samples.npz): no choosing. The samples are placed pixel for pixel
(each image pixel a block of SCALE x SCALE), so a test can hold the picture to the kept runs.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import data

ROOT = os.path.dirname(os.path.abspath(data.__file__))                    # the repository
RUNS = os.path.join(ROOT, "results", "ladder", "runs")
PICTURE = os.path.join(ROOT, "results", "lesson.png")
# (run folder, name, objective, the kind of objective): the ladder, categorical objectives first
MODELS = (("maskgit", "MaskGIT", "categorical\ncross-entropy", "categorical"),
          ("jepa_maskgit", "JEPA-MaskGIT", "cross-entropy\n+ latent prediction", "categorical"),
          ("givt", "GIVT", "Gaussian\nmixture", "continuous"),
          ("mar", "MAR", "per-token\ndiffusion", "continuous"),
          ("dit", "DiT", "diffusion over\nall tokens", "continuous"))
KIND_COLORS = {"categorical": "#ffb060", "continuous": "#9be09b"}
SEEN, NOVEL = "100", "111"
PER_SIDE = 5                  # samples of each composition a model shows
SCALE = 2                     # screen pixels per image pixel
GAP = 2                       # image pixels between two samples, and between two models
SPLIT = 14                    # image pixels between the seen and the novel samples
BACKGROUND = 40               # the grey of the sample grids' gaps
LEFT, TOP, RIGHT, BOTTOM = 162, 58, 8, 8                   # margins, screen pixels
DPI = 100


def describe(code):
    """'111' -> 'blue small triangle' (the bits: shape, colour, size)."""
    shape, color, size = data.code_to_bits(code)
    return f"{('red', 'blue')[color]} {('big', 'small')[size]} {('circle', 'triangle')[shape]}"


def first_samples(run, code, n=PER_SIDE):
    """The first n final samples a run drew asked for code: (n, 32, 32, 3) uint8."""
    path = os.path.join(RUNS, run, "samples.npz")
    if not os.path.exists(path):
        raise SystemExit(f"error: {path} is missing; keep the ladder's runs with tools/collect.py")
    saved = np.load(path)
    asked = np.array([data.bits_to_code(bits) for bits in saved["factors"]])
    images = saved["images"][asked == code][:n]
    if len(images) < n:
        raise SystemExit(f"error: {path} holds {len(images)} samples of {code}, {n} are drawn")
    return images


def strip(images):
    """Images side by side, GAP pixels apart: (32, n * 32 + (n - 1) * GAP, 3)."""
    gap = np.full((data.IMAGE_SIZE, GAP, 3), BACKGROUND, np.uint8)
    return np.concatenate([part for image in images for part in (gap, image)][1:], axis=1)


def mosaic():
    """Every model's row, seen samples | split | novel samples, scaled: (H, W, 3) uint8."""
    rows = []
    for run, *_ in MODELS:
        seen, novel = strip(first_samples(run, SEEN)), strip(first_samples(run, NOVEL))
        split = np.full((data.IMAGE_SIZE, SPLIT, 3), BACKGROUND, np.uint8)
        split[:, SPLIT // 2 - 1:SPLIT // 2 + 1] = 150          # a light line between the two
        rows += [np.full((GAP, 2 * seen.shape[1] + SPLIT, 3), BACKGROUND, np.uint8),
                 np.concatenate([seen, split, novel], axis=1)]
    picture = np.concatenate(rows[1:], axis=0)
    return picture.repeat(SCALE, axis=0).repeat(SCALE, axis=1)


def save_lesson(path=PICTURE):
    """The picture: the mosaic at (LEFT, TOP), the models' names and objectives to its left and
    what was asked above each half. Returns the mosaic."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    samples = mosaic()
    height, width = samples.shape[:2]
    size = (LEFT + width + RIGHT, TOP + height + BOTTOM)                  # screen pixels
    fig = plt.figure(figsize=(size[0] / DPI, size[1] / DPI), dpi=DPI,
                     facecolor=np.full(3, BACKGROUND / 255))
    fig.figimage(samples, LEFT, BOTTOM, origin="upper")       # pixel for pixel: no resampling

    def x(from_left):                     # screen pixels to the figure's coordinates
        return from_left / size[0]

    def y(from_top):
        return 1 - from_top / size[1]
    row = (data.IMAGE_SIZE + GAP) * SCALE
    for i, (_, name, objective, kind) in enumerate(MODELS):
        middle = TOP + i * row + data.IMAGE_SIZE * SCALE / 2
        fig.text(x(LEFT - 10), y(middle - 4), name, ha="right", va="bottom", color="white",
                 fontsize=12, fontweight="bold")
        fig.text(x(LEFT - 10), y(middle), objective, ha="right", va="top", color=KIND_COLORS[kind],
                 fontsize=8.5, linespacing=1.1)
    for i, (kind, color) in enumerate(KIND_COLORS.items()):             # the colours' key
        fig.text(x(LEFT - 10), y(TOP - 30 + 17 * i), f"{kind} objective", ha="right",
                 va="bottom", color=color, fontsize=9)
    half = (width - SPLIT * SCALE) / 2
    for left, code, heading, color in ((0, SEEN, "seen in training", "#7fb8ff"),
                                       (half + SPLIT * SCALE, NOVEL, "never seen", "#ff7f7f")):
        centre = x(LEFT + left + half / 2)
        fig.text(centre, y(TOP - 26), heading, ha="center", va="bottom", color=color,
                 fontsize=12, fontweight="bold")
        fig.text(centre, y(TOP - 6), f"asked for {code}: {describe(code)}", ha="center",
                 va="bottom", color="white", fontsize=10)
    fig.savefig(path, dpi=DPI, facecolor=fig.get_facecolor(), metadata={"Software": None})
    plt.close(fig)
    return samples


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=PICTURE, help="where to write the picture")
    args = parser.parse_args(argv)
    save_lesson(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
