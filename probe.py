"""The judge: three readings of every generated sample, and the calibration that defines them.

  acc (composition, the headline): the sample is ONE LEGIBLE OBJECT and all three factors,
      read off it, are the ones asked for. Legible means what a person would accept: we
      fit the renderer's circle and triangle (position and size, least squares), weigh the
      two against each other (w = 0 circle, 1 triangle) and accept one clean object whose
      shape is not in between, whose outline stays within about a pixel of the fit, with no
      hole, bite or second object, one class colour throughout (no chimera, no patch of the
      other colour; single specks are forgiven) and a size near the world's. The thresholds
      (LEGIBLE) are set by the calibration suite (calibration.py), not by model
      samples: kinds a person accepts (wobbly, blurred, rounded, noisy, ragged, speckled,
      mottled, slightly off) must pass, >= 98% of each; kinds a person rejects (fragments,
      chimeras, colour patches, half-way morphs, holes, two objects) must fail, >= 97%.
      tests/gallery.npz, 576 model samples labelled by eye, measures agreement with a person.
  fidelity: the renderer reproduces the sample within a tight tolerance (at most 8 pixels
      off by more than 0.25) and a linear factor reader (one softmax classifier per factor
      on the image shifted so its coverage is centred) reads all three factors right: how
      PRECISELY it is drawn.
  probe_acc: the paper's probe, as the study's code computes it: one linear classifier per
      factor on the raw flattened pixels (not centred), trained on real images of all eight
      compositions; a composition's reading is the PRODUCT of its three per-factor
      accuracies over its samples, not the share of samples with all three right. It
      credits fragments and chimeras.

`python probe.py` prints the three readings on real images, the calibration table and the
gallery agreement; `python tools/rejudge.py runs/dit ...` recomputes a run's metrics from
its kept samples.
"""
import math
import os

import numpy as np
import torch

import data

MAX_BAD_PIXELS = 8      # fidelity: pixels the best rendering may miss by more than BAD_PIXEL
BAD_PIXEL = 0.25        # a pixel is bad if its largest channel error exceeds this
PROBE_SEED, HELD_OUT_SEED = 12345, 54321
GALLERY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "gallery.npz")
LEGIBLE = dict(         # set by the calibration suite (calibration_images), not by model samples
    min_area=6,              # pixels of the object (fewer: blank)
    max_second_area=2,       # pixels of any second object
    max_chimera=0.05,        # fraction of the object's pixels in the other class colour
    max_other_patch=3,       # pixels of the largest connected patch in the other class colour
    max_color_error=0.25,    # per channel, from the nearest class colour
    sizes=(3.6, 11.5),       # fitted size s in pixels (the world: 4.5-5.5 and 8-9.5)
    max_reach=1.3,           # pixels the outline may stray out of / into the fitted shape
    max_local=4.0,           # misfit summed over any 3x3 window (holes, bites, spikes)
    circle_below=0.33,       # circle: w + 0.1 * (outline beyond the pure circle) below this
    triangle_above=0.6,      # triangle: w above this; in between is a morph, not a shape
)


# ----------------------------------------------------------- fidelity (the tight test)
def fit_world(images):
    """Best renderable explanation of each image: (latents (N, 7), bad pixel count (N,))."""
    images = np.asarray(images, dtype=np.float32)
    n = len(images)
    flat = images.reshape(n, -1, 3)
    bright = flat.max(2) > 0.5                                           # object interior
    color = (flat * bright[..., None]).sum(1) / bright.sum(1, keepdims=True).clip(1)
    alpha = (flat * color[:, None]).sum(2) / (color ** 2).sum(1, keepdims=True).clip(1e-6)
    alpha = np.where(alpha > 0.25, alpha.clip(0, 1), 0.0)                # ignore faint noise
    area = alpha.sum(1).clip(1e-6)
    grid = np.arange(data.IMAGE_SIZE, dtype=np.float32) + 0.5
    ys, xs = [g.ravel() for g in np.meshgrid(grid, grid, indexing="ij")]
    cx, cy = (alpha * xs).sum(1) / area, (alpha * ys).sum(1) / area
    circle_size = np.sqrt(area / math.pi)                                # area = pi s^2
    triangle_radius = np.sqrt(4 * area / (3 * math.sqrt(3)))             # area = 3 sqrt3 R^2 / 4
    shape = np.repeat([0.0, 1.0], n)
    size = np.concatenate([circle_size, triangle_radius / data.TRIANGLE_SCALE])
    centre_y = np.concatenate([cy, cy - 0.25 * triangle_radius])         # centroid -> box centre
    latents = np.concatenate([shape[:, None], np.tile(color, (2, 1)), size[:, None],
                              np.tile(cx, 2)[:, None], centre_y[:, None]], 1)
    error = np.abs(data.render(latents) - np.tile(images, (2, 1, 1, 1))).max(-1)
    bad = (error > BAD_PIXEL).sum((1, 2)).reshape(2, n)
    best = bad.argmin(0)
    bad = np.where(bright.sum(1) >= 4, bad[best, np.arange(n)], data.IMAGE_SIZE ** 2)
    return latents.reshape(2, n, 7)[best, np.arange(n)], bad


def well_formed(images):
    """True where the renderer reproduces the image within the tight tolerance."""
    latents, bad = fit_world(images)
    color_ok = (np.abs(latents[:, None, 1:4] - data.CLASS_COLORS[None]).max(2)
                <= data.COLOR_JITTER + 0.07).any(1)
    size, (low, high) = latents[:, 4], (data.SIZE_RANGES.min() - 0.5, data.SIZE_RANGES.max() + 0.5)
    return (bad <= MAX_BAD_PIXELS) & color_ok & (size >= low) & (size <= high)


# ------------------------------------------------------------------- the linear probes
def features(images):
    """The factor reader's feature map: each image shifted (whole pixels) so its coverage is centred."""
    images = torch.as_tensor(np.asarray(images, dtype=np.float32))
    coverage = images.amax(-1)                                           # (N, H, W)
    total = coverage.sum((1, 2)).clamp(min=1e-6)
    grid = torch.arange(data.IMAGE_SIZE, dtype=torch.float32)
    cy = (coverage.sum(2) * grid).sum(1) / total
    cx = (coverage.sum(1) * grid).sum(1) / total
    centre = (data.IMAGE_SIZE - 1) / 2
    shifted = [torch.roll(image, (int(round(centre - y)), int(round(centre - x))), (0, 1))
               for image, y, x in zip(images, cy.tolist(), cx.tolist())]
    return torch.stack(shifted).flatten(1)                              # (N, H*W*3)


def raw_pixels(images):
    """The study's probe reads the image as it is: flattened pixels in [0, 1], not centred."""
    return torch.as_tensor(np.asarray(images, dtype=np.float32)).flatten(1)   # (N, H*W*3)


PROBES = {"reader": features, "study": raw_pixels}     # fidelity's factor reader; the paper's probe


class LinearProbe(torch.nn.Module):
    """One linear softmax classifier per factor (2 logits each) on a fixed feature map."""

    def __init__(self, kind="reader", dim=data.IMAGE_SIZE ** 2 * 3):
        super().__init__()
        self.kind = kind
        self.heads = torch.nn.Linear(dim, 2 * len(data.FACTORS))

    def forward(self, x):
        return self.heads(x).view(len(x), len(data.FACTORS), 2)         # (N, 3, 2)

    def predict(self, images):
        with torch.no_grad():
            return self(PROBES[self.kind](images)).argmax(-1).numpy()   # (N, 3) bits


def train_probe(kind="reader", n_per_code=1000, seed=PROBE_SEED):
    """Both on real images of all eight compositions. reader: full-batch Adam, 300 steps, half the
    images with pixel noise so that it does not lean on faint pixels. study: the study's recipe,
    Adam (lr 1e-3) for 200 epochs of batches of 128 on the clean images."""
    images, bits, _ = data.make_dataset(data.COMPOSITIONS, n_per_code, seed)
    torch.manual_seed(seed)
    probe = LinearProbe(kind)
    y = torch.as_tensor(bits)
    loss = lambda x, y: torch.nn.functional.cross_entropy(probe(x).flatten(0, 1), y.flatten())
    if kind == "study":
        x, order = raw_pixels(images), torch.Generator().manual_seed(seed)
        optimizer = torch.optim.Adam(probe.parameters(), lr=1e-3)
        for _ in range(200):
            for batch in torch.randperm(len(x), generator=order).split(128):
                optimizer.zero_grad()
                loss(x[batch], y[batch]).backward()
                optimizer.step()
        return probe
    noise = np.random.default_rng(seed).normal(0, 0.05, images.shape).astype(np.float32)
    x = features(np.clip(images + noise * (np.arange(len(images)) % 2)[:, None, None, None], 0, 1))
    optimizer = torch.optim.Adam(probe.parameters(), lr=1e-2, weight_decay=1e-4)
    for _ in range(300):
        optimizer.zero_grad()
        loss(x, y).backward()
        optimizer.step()
    return probe


def load_probe(kind="reader"):
    """A probe, trained once and cached under .cache/ (keyed on the world's definition)."""
    path = data.cache_path("probe" if kind == "reader" else f"probe-{kind}")
    probe = LinearProbe(kind)
    if os.path.exists(path):
        probe.load_state_dict(torch.load(path, weights_only=True))
        return probe
    probe = train_probe(kind)
    data.save_atomic(probe.state_dict(), path, shared=True)
    return probe


# ------------------------------------------------------------ legibility (the composition reading)
def _median3(x):
    """3x3 median of (N, H, W), zero-padded: removes salt and single-pixel speckle."""
    size = data.IMAGE_SIZE
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    return np.median(np.stack([padded[:, i:i + size, j:j + size] for i in range(3) for j in range(3)]), 0)


def _components(mask):
    """8-connected components of (N, H, W) bool: labels (N, H, W), 0 = background."""
    mask = torch.as_tensor(mask)
    inside = mask.reshape(len(mask), -1)
    labels = torch.arange(1, mask[0].numel() + 1).reshape(mask[0].shape) * mask
    while True:                                    # every pixel takes the largest label around it,
        grown = torch.nn.functional.max_pool2d(labels[:, None].float(), 3, 1, 1)[:, 0].long() * mask
        flat = grown.reshape(len(mask), -1)        # then the label of the pixel its label names (a jump)
        grown = torch.maximum(flat, torch.gather(flat, 1, (flat - 1).clamp(min=0)) * inside).reshape(mask.shape)
        if torch.equal(grown, labels):
            return grown.numpy()
        labels = grown


def _coverage(params, triangle):
    circle, tri = data.outline_distances(params[:, 2], params[:, 0], params[:, 1])
    return data.coverage_of(tri if triangle else circle)


def _largest_part(mask):
    """Pixels in the largest 8-connected part of each (H, W) mask of (N, H, W), 0 if none."""
    return np.array([np.bincount(labels.ravel(), minlength=2)[1:].max() for labels in _components(mask)])


def _refine(alpha, params, triangle, iterations=4, h=0.1):
    """Gauss-Newton on one shape's (cx, cy, s): least squares against the coverage alpha."""
    params = params.astype(np.float64)
    for _ in range(iterations):
        base = _coverage(params, triangle)
        residual = (alpha - base).reshape(len(alpha), -1)                    # (N, P)
        jacobian = np.stack([((_coverage(params + h * np.eye(3)[j], triangle) - base) / h).reshape(len(alpha), -1)
                             for j in range(3)], 2)                          # (N, P, 3)
        normal = np.einsum("npi,npj->nij", jacobian, jacobian) + 1e-3 * np.eye(3)
        step = np.linalg.solve(normal, np.einsum("npi,np->ni", jacobian, residual)[..., None])[..., 0]
        params = params + step.clip(-2, 2)
        params[:, 2] = params[:, 2].clip(1, 20)
    return params


def fit_shapes(alpha):
    """The best circle and the best triangle for each coverage map (N, H, W), and w, the
    least-squares weight of the triangle against the circle: alpha ~ (1 - w) F_circle + w F_triangle."""
    grid = np.arange(data.IMAGE_SIZE) + 0.5
    area = alpha.sum((1, 2)).clip(1)
    cx, cy = (alpha.sum(1) * grid).sum(1) / area, (alpha.sum(2) * grid).sum(1) / area   # moments
    circle_s = np.sqrt(area / math.pi)                                    # area = pi s^2
    triangle_s = np.sqrt(area / (0.75 * math.sqrt(3) * data.TRIANGLE_SCALE ** 2))  # 3 sqrt3 R^2 / 4
    circle = _refine(alpha, np.stack([cx, cy, circle_s], 1), triangle=False)
    triangle = _refine(alpha, np.stack([cx, cy - 0.25 * data.TRIANGLE_SCALE * triangle_s, triangle_s], 1),
                       triangle=True)                                     # centroid -> box centre
    d_circle = data.outline_distances(circle[:, 2], circle[:, 0], circle[:, 1])[0]
    d_triangle = data.outline_distances(triangle[:, 2], triangle[:, 0], triangle[:, 1])[1]
    f_circle, f_triangle = data.coverage_of(d_circle), data.coverage_of(d_triangle)
    difference = f_triangle - f_circle
    w = (((alpha - f_circle) * difference).sum((1, 2)) / (difference ** 2).sum((1, 2)).clip(1e-6)).clip(0, 1)
    w3 = w[:, None, None]
    return dict(w=w, size=(1 - w) * circle[:, 2] + w * triangle[:, 2], mix=f_circle + w3 * difference,
                distance=(1 - w3) * d_circle + w3 * d_triangle,                   # the in-between outline
                pure=np.where(w3 >= 0.5, d_triangle, d_circle))                   # the shape it reads as


def read_objects(images):
    """What a person reads in each image (N, H, W, 3) in [0, 1]: the object's bits
    (shape, colour, size) and the measurements that say whether it is legible."""
    n = len(images)
    brightness = images.max(-1)                                            # (N, H, W)
    smooth = _median3(brightness)
    level = np.array([np.percentile(b[b > 0.25], 90) if (b > 0.25).sum() >= 4 else 1.0 for b in smooth])
    smooth_alpha = np.clip(smooth / level[:, None, None], 0, 1)            # coverage, salt removed
    chroma = images.max(-1) - images.min(-1)                               # 0 for grey or white specks
    covered = (brightness > 0.5 * level[:, None, None]) & (chroma > 0.2 * level[:, None, None])
    labels = _components(covered)                                          # thin parts kept, white salt not
    areas = np.stack([np.bincount(image.ravel(), minlength=labels[0].size + 1)[1:] for image in labels])
    order = np.argsort(-areas, 1)
    main = labels == order[:, :1, None] + 1                                # the largest object
    near = torch.nn.functional.max_pool2d(torch.as_tensor(main, dtype=torch.float32)[:, None], 3, 1, 1)[:, 0].numpy() > 0
    solid = main & (smooth_alpha > 0.8) & (brightness > 0.9 * level[:, None, None])   # the full-strength colour
    color = np.stack([np.median(image[m], 0) if m.any() else np.zeros(3) for image, m in zip(images, solid)])
    # Fit on the raw coverage (sharp corners kept); a pixel that is not coverage x the object's
    # colour (salt, a white speck) or a dark speck inside takes the median-filtered value instead.
    alpha = np.clip(brightness / level[:, None, None], 0, 1)
    outlier = np.linalg.norm(images - alpha[..., None] * color[:, None, None], axis=-1) > 0.35
    bright = torch.as_tensor(alpha > 0.5, dtype=torch.float32)[:, None]
    bright_around = (9 * torch.nn.functional.avg_pool2d(bright, 3, 1, 1)[:, 0] - bright[:, 0]).round().numpy()
    dark_speck = (alpha < smooth_alpha - 0.5) & (bright_around >= 7)       # a dark pixel walled in by the object
    alpha = np.where(near, np.where(outlier | dark_speck, smooth_alpha, alpha), 0.0)
    fit = fit_shapes(alpha)
    edge = alpha - 0.5                                # sub-pixel: the outline lies edge px beyond the centre
    smooth_near = np.where(near, smooth_alpha, 0.0)                         # specks on a ragged edge smoothed away
    reach_out = np.where(smooth_near > 0.35, fit["distance"] + smooth_near - 0.5, -9).reshape(n, -1).max(1)
    reach_in = np.where(alpha < 0.25, -(fit["distance"] + edge), -9).reshape(n, -1).max(1)   # bites, holes: dark, not dim
    beyond_pure = np.where(alpha > 0.35, fit["pure"] + edge, -9).reshape(n, -1).max(1)
    misfit = torch.as_tensor(alpha - fit["mix"])[:, None]
    local = 9 * torch.nn.functional.avg_pool2d(misfit, 3, 1, 1).abs().reshape(n, -1).amax(1).numpy()
    blue = color[:, 2] > color[:, 0]
    redness = images[..., 0] - images[..., 2]
    counted = main & covered
    other_color = np.where(blue[:, None, None], redness > 0.2, redness < -0.2) & counted
    other_patch = _largest_part(other_color)                               # specks are 1 px, a patch is more
    small = fit["size"] < (data.SIZE_RANGES[0, 0] + data.SIZE_RANGES[1, 1]) / 2        # nearer small than big
    return dict(bits=np.stack([fit["w"] >= 0.5, blue, small], 1).astype(np.int64),
                area=areas[np.arange(n), order[:, 0]], second_area=areas[np.arange(n), order[:, 1]],
                chimera=other_color.sum((1, 2)) / counted.sum((1, 2)).clip(1), other_patch=other_patch,
                color_error=np.abs(color - data.CLASS_COLORS[blue.astype(int)]).max(1),
                size=fit["size"], w=fit["w"], reach=np.maximum(reach_out, reach_in), local=local,
                circle_score=fit["w"] + 0.1 * beyond_pure.clip(0))


def legible(objects, rule=LEGIBLE):
    """One clean object of one class colour, a shape that is not in between, a size of the world."""
    return ((objects["area"] >= rule["min_area"]) & (objects["second_area"] <= rule["max_second_area"])
            & (objects["chimera"] <= rule["max_chimera"]) & (objects["other_patch"] <= rule["max_other_patch"])
            & (objects["color_error"] <= rule["max_color_error"])
            & (objects["size"] >= rule["sizes"][0]) & (objects["size"] <= rule["sizes"][1])
            & (objects["reach"] <= rule["max_reach"]) & (objects["local"] <= rule["max_local"])
            & ((objects["circle_score"] <= rule["circle_below"]) | (objects["w"] >= rule["triangle_above"])))


# ---------------------------------------------------------- objects: how many, and where
OBJECT_AREA = (5, 20)      # pixels of one drawn disc of objects.py (a clean one covers about 12)


def find_objects(image, threshold=0.3):
    """The objects of one image: 8-connected parts of its bright pixels (max channel > threshold),
    as (centroid (x, y) in pixels, area in pixels); parts of one or two pixels are specks, left out."""
    bright = np.asarray(image).max(-1) > threshold
    labels = _components(bright[None])[0]
    found = []
    for label in np.unique(labels[labels > 0]):
        ys, xs = np.nonzero(labels == label)
        if len(xs) > 2:
            found.append(((xs.mean() + 0.5, ys.mean() + 0.5), len(xs)))
    return found


def objects_right(image, asked, reach=2.0):
    """One image drew what was asked: as many objects as asked positions, each of a disc's area,
    each within `reach` pixels of its own asked position (and so none elsewhere)."""
    found = find_objects(image)
    if len(found) != len(asked):
        return False
    free = [tuple(p) for p in np.asarray(asked, dtype=np.float64).reshape(-1, 2)]
    for (x, y), area in found:
        near = [p for p in free if (p[0] - x) ** 2 + (p[1] - y) ** 2 <= reach ** 2]
        if not near or not OBJECT_AREA[0] <= area <= OBJECT_AREA[1]:
            return False
        free.remove(near[0])                       # objects sit 5 px apart: at most one is near
    return True


# --------------------------------------------------------------------------- evaluation
_JUDGE = {}


def _judge():
    """The two probes and a real reference set for retrieval, built once per process."""
    if not _JUDGE:
        images, bits, _ = data.make_dataset(data.COMPOSITIONS, 250, HELD_OUT_SEED + 1)
        _JUDGE.update(probe=load_probe(), study_probe=load_probe("study"), reference=features(images),
                      reference_bits=bits)
    return _JUDGE


def as_float(images):
    images = np.asarray(images)
    return images.astype(np.float32) / 255 if images.dtype == np.uint8 else images.astype(np.float32)


def split_means(per_code):
    """{code: x} -> {split: mean over the split's codes present}."""
    means = {}
    for split, members in data.SPLITS.items():
        values = [per_code[c] for c in members if c in per_code]
        means[split] = float(np.mean(values)) if values else float("nan")
    return means


def readings(images, factors):
    """Per sample: composed and precise (fidelity), (N,) bool; legible, (N,) bool; and
    probe_factors, (N, 3) bool, which factor the study's probe reads right."""
    images, factors = as_float(images), np.asarray(factors, dtype=np.int64)
    objects = read_objects(images)
    reader_right = (_judge()["probe"].predict(images) == factors).all(1)
    composed = legible(objects) & (objects["bits"] == factors).all(1)
    return dict(composed=composed, precise=well_formed(images) & reader_right, legible=legible(objects),
                probe_factors=_judge()["study_probe"].predict(images) == factors)


def probe_accuracy(probe_factors):
    """The study's probe reading of one composition's samples: the product over the three factors
    of the share of samples whose factor it reads right (N, 3) -> a number in [0, 1]."""
    return float(np.prod(np.asarray(probe_factors, dtype=np.float64).mean(0)))


def evaluate(images, factors):
    """Judge generated images (N, H, W, 3) in [0, 1] (uint8 accepted) asked for `factors` (N, 3).

    Returns the three readings per composition, acc (composition), fidelity and probe_acc;
    the split means of acc as seen / level1 / level2; malformed, the fraction that is not
    one legible object; and retrieval_1nn / retrieval_5nn, the fraction whose nearest real
    image(s), among real images of all eight compositions, have the asked composition.
    """
    factors = np.asarray(factors, dtype=np.int64)
    judged = readings(images, factors)
    judge = _judge()
    neighbours = torch.cdist(features(as_float(images)), judge["reference"]).topk(5, largest=False).indices
    same = (judge["reference_bits"][neighbours.numpy()] == factors[:, None]).all(2)   # (N, 5)
    codes = np.array([data.bits_to_code(f) for f in factors])
    present = [c for c in data.COMPOSITIONS if (codes == c).any()]
    per_code = {name: {c: float(judged[key][codes == c].mean()) for c in present}
                for name, key in (("acc", "composed"), ("fidelity", "precise"))}
    per_code["probe_acc"] = {c: probe_accuracy(judged["probe_factors"][codes == c]) for c in present}
    return dict(per_code, **split_means(per_code["acc"]), malformed=float(1 - judged["legible"].mean()),
                retrieval_1nn=float(same[:, 0].mean()), retrieval_5nn=float((same.sum(1) >= 3).mean()))


def describe(code):
    """'110' -> 'blue big triangle'."""
    shape, color, size = data.code_to_bits(code)
    return f"{('red', 'blue')[color]} {('big', 'small')[size]} {('circle', 'triangle')[shape]}"



# ------------------------------------------------------------------ agreement with a person
VERDICTS = ("right composition", "wrong composition", "not one legible object")


def verdicts(images, factors):
    """The judge's verdict on each sample, as an index into VERDICTS."""
    judged = readings(images, factors)
    return np.where(~judged["legible"], 2, np.where(judged["composed"], 0, 1))


def gallery_agreement(path=GALLERY):
    """(fraction of the gallery where the judge says what the person said, 3x3 confusion counts
    with the person's label as the row and the judge's verdict as the column)."""
    gallery = np.load(path)
    judge, person = verdicts(gallery["images"], gallery["factors"]), gallery["labels"]
    confusion = np.zeros((3, 3), np.int64)
    np.add.at(confusion, (person, judge), 1)
    return float((judge == person).mean()), confusion


# ------------------------------------------------------------------------------- main
def _table(rows):
    print(f"{'images':<34}{'reading':>10}" + "".join(f"{c:>6}" for c in data.COMPOSITIONS) + f"{'illegible':>11}")
    for name, result in rows:
        for i, (reading, label) in enumerate((("acc", "composed"), ("fidelity", "fidelity"), ("probe_acc", "probe"))):
            print(f"{name if i == 0 else '':<34}{label:>10}" + "".join(f"{100 * result[reading][c]:6.1f}" for c in data.COMPOSITIONS)
                  + (f"{100 * result['malformed']:10.1f}%" if i == 0 else ""))


def main(argv=None):
    import argparse
    import time
    parser = argparse.ArgumentParser(description="The judge's report: the three readings on real images and "
                                     "tokenizer round trips, the calibration table and the agreement with a person "
                                     "on the gallery (about a minute on 2 cores). To judge a run's kept samples "
                                     "again: python tools/rejudge.py RUN_FOLDER.")
    parser.parse_args(argv)
    start = time.time()
    load_probe()
    print(f"probe ready in {time.time() - start:.1f}s (cached under {data.CACHE_DIR})\n")
    images, bits, _ = data.make_dataset(data.COMPOSITIONS, 250, HELD_OUT_SEED)
    noisy = images + np.random.default_rng(0).normal(0, 0.05, images.shape).astype(np.float32)
    rows = [("real (held out)", evaluate(images, bits)), ("real + noise sigma 0.05", evaluate(noisy.clip(0, 1), bits))]
    for name in ("codebook", "pca"):
        tokenizer = data.load_tokenizer(name)
        roundtrip = tokenizer.decode(tokenizer.encode(images))
        rows.append((f"{name} round trip ({tokenizer.patch}x{tokenizer.patch} patches)", evaluate(roundtrip, bits)))
    print("the three readings (%) per composition, 250 images each")
    _table(rows)
    from calibration import calibration_images                           # the suite that defines legible
    accepted, rejected, asked = calibration_images(400, seed=1)
    print("\ncalibration (400 images a kind): accepted must be >= 98% composed, rejected >= 97% not legible")
    for name, batch in accepted.items():
        print(f"  accept  {name:<48} {100 * readings(batch, asked)['composed'].mean():5.1f}% composed")
    for name, batch in rejected.items():
        print(f"  reject  {name:<48} {100 * (1 - readings(batch, asked)['legible'].mean()):5.1f}% not legible")
    if os.path.exists(GALLERY):
        agreement, confusion = gallery_agreement()
        print(f"\ngallery: the judge agrees with a person on {100 * agreement:.1f}% of {confusion.sum()} model samples")
        print(f"  {'person / judge':<24}" + "".join(f"{v.split()[0]:>8}" for v in VERDICTS))
        for verdict, row in zip(VERDICTS, confusion):
            print(f"  {verdict:<24}" + "".join(f"{x:8d}" for x in row))
    print(f"\n{time.time() - start:.1f}s in all")


if __name__ == "__main__":
    main()
