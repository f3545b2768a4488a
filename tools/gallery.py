"""The gallery: model samples labelled by a person, to measure how well the judge agrees.

    python tools/gallery.py collect runs/dit     # pick 96 of a run's samples, draw sheets to label
    python tools/gallery.py label runs/dit FILE  # attach the person's labels (one letter a sample)
    python tools/gallery.py build                # join the labelled runs into tests/gallery.npz
    python tools/gallery.py ceiling              # the best agreement the calibration suite allows

`collect` takes 2, 4 and 6 samples per composition at steps 500, 1000 and 2000 (the nearest
kept), shuffled so the labeller does not see the step, on numbered sheets that show only the
asked composition, never the judge's reading. A person writes a letter a sample: r (right
composition), w (wrong), x (not one legible object). tests/test_judge.py holds the judge to it.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import data  # noqa: E402
import judge  # noqa: E402
import runs  # noqa: E402

PICK = {500: 2, 1000: 4, 2000: 6}           # step -> samples per composition
PENDING = os.path.join(os.path.dirname(HERE), "runs", "gallery")
LETTERS = "rwx"                             # indices into judge.VERDICTS


def nearest_step(folder, step):
    steps = [int(name[5:-4]) for name in os.listdir(os.path.join(folder, "samples"))]
    return min(steps, key=lambda s: abs(s - step))


def collect(folder, seed=0):
    name = os.path.basename(os.path.normpath(folder))
    rng = np.random.default_rng([seed, sum(map(ord, name))])
    images, factors, sources = [], [], []
    for want, per_code in PICK.items():
        step = nearest_step(folder, want)
        saved = np.load(os.path.join(folder, "samples", f"step_{step}.npz"))
        codes = np.array([data.bits_to_code(f) for f in saved["factors"]])
        for code in data.COMPOSITIONS:
            chosen = rng.choice(np.flatnonzero(codes == code), per_code, replace=False)
            images.append(saved["images"][chosen])
            factors.append(saved["factors"][chosen])
            sources += [f"{name} step {step}"] * per_code
    order = rng.permutation(len(sources))
    images, factors = np.concatenate(images)[order], np.concatenate(factors)[order]
    os.makedirs(PENDING, exist_ok=True)
    np.savez_compressed(os.path.join(PENDING, f"{name}.npz"), images=images, factors=factors,
                        sources=np.array(sources)[order], labels=np.full(len(order), -1))
    save_sheets(images, factors, [""] * len(order), os.path.join(PENDING, name))
    print(f"{len(order)} samples of {name}; label the sheets {os.path.join(PENDING, name)}_*.png")


def save_sheets(images, factors, notes, prefix, per_sheet=48, columns=8):
    plt = runs.pyplot()
    for first in range(0, len(images), per_sheet):
        fig, axes = plt.subplots(per_sheet // columns, columns,
                                 figsize=(columns * 1.3, per_sheet // columns * 1.5))
        for k, ax in enumerate(axes.flat):
            ax.set_axis_off()
            i = first + k
            if i < len(images):
                ax.imshow(images[i], interpolation="nearest")
                ax.set_title(f"{i}: {judge.describe(data.bits_to_code(factors[i]))}\n{notes[i]}",
                             fontsize=6)
        fig.tight_layout()
        fig.savefig(f"{prefix}_{first // per_sheet:02d}.png", dpi=100)
        plt.close(fig)


def label(folder, path):
    pending = os.path.join(PENDING, f"{os.path.basename(os.path.normpath(folder))}.npz")
    gallery = dict(np.load(pending))
    letters = "".join(c for c in open(path).read() if c in LETTERS)
    if len(letters) != len(gallery["images"]):
        raise SystemExit(f"error: {path} has {len(letters)} labels for "
                         f"{len(gallery['images'])} samples")
    gallery["labels"] = np.array([LETTERS.index(c) for c in letters])
    np.savez_compressed(pending, **gallery)


def build():
    parts = [dict(np.load(os.path.join(PENDING, f))) for f in sorted(os.listdir(PENDING))
             if f.endswith(".npz")]
    parts = [p for p in parts if (p["labels"] >= 0).all()]
    joined = {key: np.concatenate([p[key] for p in parts])
              for key in ("images", "factors", "sources", "labels")}
    np.savez_compressed(judge.GALLERY, **joined)
    print(f"{len(joined['labels'])} labelled samples from {len(parts)} runs in {judge.GALLERY}")


def ceiling():
    """How far the gallery agreement can go without breaking the calibration suite: for each
    threshold of judge.LEGIBLE alone, the values the suite allows (every accepted kind >= 98%
    composed, every rejected kind <= 3% legible, seed 1 as in `python judge.py`), then the best
    agreement over a grid of the four thresholds behind most disagreements, allowed or not."""
    from worlds.shapes2d_calibration import calibration_images
    accepted, rejected, asked = calibration_images(400, seed=1)
    accepted = [judge.read_objects(judge.as_float(images)) for images in accepted.values()]
    rejected = [judge.read_objects(judge.as_float(images)) for images in rejected.values()]
    gallery = np.load(judge.GALLERY)
    objects = judge.read_objects(judge.as_float(gallery["images"]))

    def allowed(rule):
        composed = min((judge.legible(o, rule) & (o["bits"] == asked).all(1)).mean()
                       for o in accepted)
        return composed >= 0.98 and max(judge.legible(o, rule).mean() for o in rejected) <= 0.03

    def agreement(rule):
        legible = judge.legible(objects, rule)
        judged = np.where(~legible, 2,
                          np.where((objects["bits"] == gallery["factors"]).all(1), 0, 1))
        return (judged == gallery["labels"]).mean()

    grids = dict(max_reach=np.arange(0.8, 3.01, 0.05), max_local=np.arange(2.5, 7.01, 0.1),
                 max_second_area=np.arange(0, 15), circle_below=np.arange(0.2, 0.6, 0.01),
                 triangle_above=np.arange(0.35, 0.9, 0.01), max_chimera=np.arange(0, 0.3, 0.01),
                 max_other_patch=np.arange(0, 15), max_color_error=np.arange(0.1, 0.5, 0.01))
    print(f"as set: agreement {100 * agreement(judge.LEGIBLE):.1f}%; one threshold at a time, the "
          "suite allows:")
    for key, grid in grids.items():
        good = [v for v in grid if allowed(dict(judge.LEGIBLE, **{key: v}))]
        best = max(good, key=lambda v: agreement(dict(judge.LEGIBLE, **{key: v})))
        print(f"  {key:<16} set {judge.LEGIBLE[key]:<5} allowed {min(good):.2f} .. "
              f"{max(good):.2f}, "
              f"best agreement there {100 * agreement(dict(judge.LEGIBLE, **{key: best})):.1f}% "
              f"(at {best:.2f})")
    results = []
    for reach in (1.3, 1.5, 1.8, 2.1, 2.5, 3.1):
        for local in (4.0, 4.5, 5.0):
            for second in (2, 5):
                for circle in (0.33, 0.45):
                    rule = dict(judge.LEGIBLE, max_reach=reach, max_local=local,
                                max_second_area=second, circle_below=circle)
                    results.append((agreement(rule), allowed(rule), reach, local, second, circle))
    for name, pool in (("allowed by the suite", [r for r in results if r[1]]), ("any", results)):
        best = max(pool)
        print(f"best over the grid, {name}: {100 * best[0]:.1f}% (max_reach {best[2]}, "
              f"max_local {best[3]}, "
              f"max_second_area {best[4]}, circle_below {best[5]})")


if __name__ == "__main__":
    verbs = {"collect": lambda *folders: [collect(f) for f in folders], "label": label,
             "build": build, "ceiling": ceiling}
    if sys.argv[1:2] and sys.argv[1] in verbs:
        verbs[sys.argv[1]](*sys.argv[2:])
    else:
        raise SystemExit(__doc__)
