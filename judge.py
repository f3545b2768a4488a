"""The judge: three readings of every generated sample, and the calibration that defines them.

  acc (composition, the headline): the sample is ONE LEGIBLE OBJECT and all three factors,
      read off it, are the ones asked for. Legible means what a person would accept: we
      fit the renderer's circle and triangle (position and size, least squares), weigh the
      two against each other (w = 0 circle, 1 triangle) and accept one clean object whose
      shape is not in between, whose outline stays within about a pixel of the fit, with no
      hole, bite or second object, one class colour throughout (no chimera, no patch of the
      other colour; single specks are forgiven) and a size near the world's. The thresholds
      (LEGIBLE) are set by the calibration suite (worlds/shapes2d_calibration.py), not by model
      samples: kinds a person accepts (wobbly, blurred, rounded, noisy, ragged, speckled,
      mottled, slightly off) must pass, >= 98% of each; kinds a person rejects (fragments,
      chimeras, colour patches, half-way morphs, holes, two objects) must fail, >= 97%.
      tests/gallery.npz, 576 model samples labelled by eye, measures agreement with a person.
  fidelity: the renderer reproduces the sample within a tight tolerance (at most 8 pixels
      off by more than 0.25) and a linear factor reader (one softmax classifier per factor
      on the image shifted so its coverage is centred) reads all three factors right: how
      PRECISELY it is drawn.
  probe_acc: the paper's probe (probe.py), as the study's code computes it: one linear
      classifier per factor on the raw flattened pixels (not centred), trained on real images
      of all eight compositions; a composition's reading is the PRODUCT of its three
      per-factor accuracies over its samples, not the share of samples with all three right.
      It credits fragments and chimeras.

It also counts the discs of objects.py's world (find_objects, objects_right).

`python judge.py` prints the three readings on real images, the calibration table and the
gallery agreement; `python tools/rejudge.py runs/dit ...` recomputes a run's metrics from
its kept samples.
"""
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

import data
import probe
import tokenizers

GALLERY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "gallery.npz")
LEGIBLE = {             # set by the calibration suite (calibration_images), not by model samples
    "min_area": 6,           # pixels of the object (fewer: blank)
    "max_second_area": 2,    # pixels of any second object
    "max_chimera": 0.05,     # fraction of the object's pixels in the other class colour
    "max_other_patch": 3,    # pixels of the largest connected patch in the other class colour
    "max_color_error": 0.25,  # per channel, from the nearest class colour
    "sizes": (3.6, 11.5),    # fitted size s in pixels (the world: 4.5-5.5 and 8-9.5)
    "max_reach": 1.3,        # pixels the outline may stray out of / into the fitted shape
    "max_local": 4.0,        # misfit summed over any 3x3 window (holes, bites, spikes)
    "circle_below": 0.33,    # circle: w + 0.1 * (outline beyond the pure circle) below this
    "triangle_above": 0.6,   # triangle: w above this; in between is a morph, not a shape
}
MAX_BAD_PIXELS = 8      # fidelity: pixels the best rendering may miss by more than BAD_PIXEL
BAD_PIXEL = 0.25        # a pixel is bad if its largest channel error exceeds this


def as_float(images):
    """Images as float32 in [0, 1]; uint8 ones are divided by 255."""
    images = np.asarray(images)
    if images.dtype == np.uint8:
        return images.astype(np.float32) / 255
    return images.astype(np.float32)


# ------------------------------------------------------ legibility (the composition reading)
def _median3(x):
    """3x3 median of (N, H, W), zero-padded: removes salt and single-pixel speckle."""
    side = data.IMAGE_SIZE
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    shifts = [padded[:, i:i + side, j:j + side] for i in range(3) for j in range(3)]
    return np.median(np.stack(shifts), 0)


def _largest_part(pixels):
    """Pixels in the largest 8-connected part of the True pixels of each (H, W) of (N, H, W)."""
    labels = data.components(pixels)
    return np.array([np.bincount(labelled.ravel(), minlength=2)[1:].max() for labelled in labels])


def _shape_coverage(params, is_triangle):
    """The coverage (N, H, W) of the circles or triangles of params (N, 3): (cx, cy, s)."""
    d_circle, d_triangle = data.outline_distances(params[:, 2], params[:, 0], params[:, 1])
    return data.coverage_of(d_triangle if is_triangle else d_circle)


def _refine(alpha, params, is_triangle, iterations=4, h=0.1):
    """Gauss-Newton on one shape's (cx, cy, s): least squares against the coverage alpha."""
    params = params.astype(np.float64)
    for _ in range(iterations):
        base = _shape_coverage(params, is_triangle)
        residual = (alpha - base).reshape(len(alpha), -1)                       # (N, P)
        jacobian = np.stack([((_shape_coverage(params + h * np.eye(3)[j], is_triangle) - base) / h)
                             .reshape(len(alpha), -1) for j in range(3)], 2)     # (N, P, 3)
        normal = np.einsum("npi,npj->nij", jacobian, jacobian) + 1e-3 * np.eye(3)
        gradient = np.einsum("npi,np->ni", jacobian, residual)[..., None]
        step = np.linalg.solve(normal, gradient)[..., 0]
        params = params + step.clip(-2, 2)
        params[:, 2] = params[:, 2].clip(1, 20)
    return params


def fit_shapes(alpha):
    """The best circle and the best triangle for each coverage map (N, H, W), and w, the
    least-squares weight of the triangle against the circle:
    alpha ~ (1 - w) F_circle + w F_triangle."""
    grid = np.arange(data.IMAGE_SIZE) + 0.5
    area = alpha.sum((1, 2)).clip(1)
    cx, cy = (alpha.sum(1) * grid).sum(1) / area, (alpha.sum(2) * grid).sum(1) / area   # moments
    circle_s = np.sqrt(area / math.pi)                                    # area = pi s^2
    triangle_s = np.sqrt(area / (0.75 * math.sqrt(3) * data.TRIANGLE_SCALE ** 2))  # 3 sqrt3 R^2 / 4
    circle = _refine(alpha, np.stack([cx, cy, circle_s], 1), is_triangle=False)
    box_cy = cy - 0.25 * data.TRIANGLE_SCALE * triangle_s                 # centroid -> box centre
    triangle = _refine(alpha, np.stack([cx, box_cy, triangle_s], 1), is_triangle=True)
    d_circle = data.outline_distances(circle[:, 2], circle[:, 0], circle[:, 1])[0]
    d_triangle = data.outline_distances(triangle[:, 2], triangle[:, 0], triangle[:, 1])[1]
    f_circle, f_triangle = data.coverage_of(d_circle), data.coverage_of(d_triangle)
    difference = f_triangle - f_circle
    w = ((alpha - f_circle) * difference).sum((1, 2)) / (difference ** 2).sum((1, 2)).clip(1e-6)
    w = w.clip(0, 1)
    w3 = w[:, None, None]
    return {"w": w, "size": (1 - w) * circle[:, 2] + w * triangle[:, 2],
            "mix": f_circle + w3 * difference,
            "distance": (1 - w3) * d_circle + w3 * d_triangle,           # the in-between outline
            "pure": np.where(w3 >= 0.5, d_triangle, d_circle)}           # the shape it reads as


def read_objects(images):
    """What a person reads in each image (N, H, W, 3) in [0, 1]: the object's bits
    (shape, colour, size) and the measurements that say whether it is legible."""
    n = len(images)
    brightness = images.max(-1)                                            # (N, H, W)
    smooth = _median3(brightness)
    peak = np.array([np.percentile(b[b > 0.25], 90) if (b > 0.25).sum() >= 4 else 1.0
                     for b in smooth])[:, None, None]                 # the object's full strength
    smooth_alpha = np.clip(smooth / peak, 0, 1)                            # coverage, salt removed
    chroma = images.max(-1) - images.min(-1)                       # 0 for grey or white specks
    covered = (brightness > 0.5 * peak) & (chroma > 0.2 * peak)
    labels = data.components(covered)                             # thin parts kept, white salt not
    areas = np.stack([np.bincount(labelled.ravel(), minlength=labels[0].size + 1)[1:]
                      for labelled in labels])
    order = np.argsort(-areas, 1)
    largest = labels == order[:, :1, None] + 1                        # the largest object
    largest_float = torch.as_tensor(largest, dtype=torch.float32)[:, None]
    vicinity = F.max_pool2d(largest_float, 3, 1, 1)[:, 0].numpy() > 0   # it and the pixels around
    solid = largest & (smooth_alpha > 0.8) & (brightness > 0.9 * peak)   # the full-strength colour
    color = np.stack([np.median(image[pixels], 0) if pixels.any() else np.zeros(3)
                      for image, pixels in zip(images, solid)])
    # Fit on the raw coverage (sharp corners kept); a pixel that is not coverage x the object's
    # colour (salt, a white speck) or a dark speck inside takes the median-filtered value instead.
    alpha = np.clip(brightness / peak, 0, 1)
    outlier = np.linalg.norm(images - alpha[..., None] * color[:, None, None], axis=-1) > 0.35
    bright = torch.as_tensor(alpha > 0.5, dtype=torch.float32)[:, None]
    bright_around = (9 * F.avg_pool2d(bright, 3, 1, 1)[:, 0] - bright[:, 0]).round().numpy()
    dark_speck = (alpha < smooth_alpha - 0.5) & (bright_around >= 7)   # dark, walled in by it
    alpha = np.where(vicinity, np.where(outlier | dark_speck, smooth_alpha, alpha), 0.0)
    fit = fit_shapes(alpha)
    edge = alpha - 0.5                      # sub-pixel: the outline lies edge px beyond the centre
    smooth_vicinity = np.where(vicinity, smooth_alpha, 0.0)       # specks on a ragged edge smoothed
    reach_out = np.where(smooth_vicinity > 0.35, fit["distance"] + smooth_vicinity - 0.5, -9)
    reach_in = np.where(alpha < 0.25, -(fit["distance"] + edge), -9)   # bites, holes: dark, not dim
    reach_out, reach_in = reach_out.reshape(n, -1).max(1), reach_in.reshape(n, -1).max(1)
    beyond_pure = np.where(alpha > 0.35, fit["pure"] + edge, -9).reshape(n, -1).max(1)
    misfit = torch.as_tensor(alpha - fit["mix"])[:, None]
    local = 9 * F.avg_pool2d(misfit, 3, 1, 1).abs().reshape(n, -1).amax(1).numpy()
    blue = color[:, 2] > color[:, 0]
    redness = images[..., 0] - images[..., 2]
    counted = largest & covered
    other_color = np.where(blue[:, None, None], redness > 0.2, redness < -0.2) & counted
    other_patch = _largest_part(other_color)                       # specks are 1 px, a patch more
    small = fit["size"] < (data.SIZE_RANGES[0, 0] + data.SIZE_RANGES[1, 1]) / 2   # nearer small
    return {"bits": np.stack([fit["w"] >= 0.5, blue, small], 1).astype(np.int64),
            "area": areas[np.arange(n), order[:, 0]],
            "second_area": areas[np.arange(n), order[:, 1]],
            "chimera": other_color.sum((1, 2)) / counted.sum((1, 2)).clip(1),
            "other_patch": other_patch,
            "color_error": np.abs(color - data.CLASS_COLORS[blue.astype(int)]).max(1),
            "size": fit["size"], "w": fit["w"], "reach": np.maximum(reach_out, reach_in),
            "local": local, "circle_score": fit["w"] + 0.1 * beyond_pure.clip(0)}


def legible(objects, rule=LEGIBLE):
    """One clean object of one class colour, a shape that is not in between, a size of the world."""
    return ((objects["area"] >= rule["min_area"])
            & (objects["second_area"] <= rule["max_second_area"])
            & (objects["chimera"] <= rule["max_chimera"])
            & (objects["other_patch"] <= rule["max_other_patch"])
            & (objects["color_error"] <= rule["max_color_error"])
            & (objects["size"] >= rule["sizes"][0]) & (objects["size"] <= rule["sizes"][1])
            & (objects["reach"] <= rule["max_reach"]) & (objects["local"] <= rule["max_local"])
            & ((objects["circle_score"] <= rule["circle_below"])
               | (objects["w"] >= rule["triangle_above"])))


# ------------------------------------------------------------------ fidelity (the tight test)
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


def centred_pixels(images):
    """The factor reader's feature map: each image shifted (whole pixels) so that its brightness
    is centred, flattened."""
    images = torch.as_tensor(np.asarray(images, dtype=np.float32))
    brightness = images.amax(-1)                                         # (N, H, W)
    total = brightness.sum((1, 2)).clamp(min=1e-6)
    grid = torch.arange(data.IMAGE_SIZE, dtype=torch.float32)
    cy = (brightness.sum(2) * grid).sum(1) / total
    cx = (brightness.sum(1) * grid).sum(1) / total
    centre = (data.IMAGE_SIZE - 1) / 2
    shifted = [torch.roll(image, (round(centre - y), round(centre - x)), (0, 1))
               for image, y, x in zip(images, cy.tolist(), cx.tolist())]
    return torch.stack(shifted).flatten(1)                              # (N, H*W*3)


READER_RECIPE = dict(n_per_code=1000, noise=0.05, lr=1e-2, weight_decay=1e-4, steps=300)


def train_reader(n_per_code=READER_RECIPE["n_per_code"], seed=probe.PROBE_SEED):
    """The factor reader: full-batch Adam, 300 steps, on the probe's training images, half of them
    with pixel noise so that it does not lean on faint pixels."""
    images, targets, reader = probe.start_training(centred_pixels, n_per_code, seed)
    noise = np.random.default_rng(seed).normal(0, READER_RECIPE["noise"], images.shape)
    every_other = (np.arange(len(images)) % 2)[:, None, None, None]
    inputs = centred_pixels(np.clip(images + noise.astype(np.float32) * every_other, 0, 1))
    optimizer = torch.optim.Adam(reader.parameters(), lr=READER_RECIPE["lr"],
                                 weight_decay=READER_RECIPE["weight_decay"])
    for _ in range(READER_RECIPE["steps"]):
        optimizer.zero_grad()
        probe.factor_loss(reader, inputs, targets).backward()
        optimizer.step()
    return reader


def load_reader():
    """The factor reader, trained once and cached."""
    return probe.cached("probe", centred_pixels, train_reader,
                        recipe=sorted(READER_RECIPE.items()))


# ---------------------------------------------------------------------- the three readings
_INSTRUMENTS = {}


def instruments(world=data):
    """The study's probe, real reference images for retrieval and, for Shapes2D, the factor
    reader: built once per process and world."""
    if world.NAME not in _INSTRUMENTS:
        images, bits, _ = world.make_dataset(world.COMPOSITIONS, world.HELD_OUT_PER_CODE,
                                             probe.HELD_OUT_SEED + 1)
        _INSTRUMENTS[world.NAME] = dict(
            reader=load_reader() if world is data else None, study_probe=probe.load_probe(world),
            reference=centred_pixels(images), reference_bits=bits)
    return _INSTRUMENTS[world.NAME]


def readings(images, factors, world=data):
    """Per sample: composed and precise (fidelity), (N,) bool; legible, (N,) bool; and
    probe_factors, (N, F) bool, which factor the study's probe reads right. A world other than
    Shapes2D reads its images itself (world.readings, which also says which values it read)."""
    images, factors = as_float(images), np.asarray(factors, dtype=np.int64)
    if world is not data:
        return dict(world.readings(images, factors),
                    probe_factors=instruments(world)["study_probe"].predict(images) == factors)
    objects = read_objects(images)
    reader_right = (instruments()["reader"].predict(images) == factors).all(1)
    composed = legible(objects) & (objects["bits"] == factors).all(1)
    return {"composed": composed, "precise": well_formed(images) & reader_right,
            "legible": legible(objects),
            "probe_factors": instruments()["study_probe"].predict(images) == factors}


def split_means(per_code, world=data):
    """{code: x} -> {split: mean over the split's codes present}."""
    means = {}
    for split, members in world.SPLITS.items():
        values = [per_code[c] for c in members if c in per_code]
        means[split] = float(np.mean(values)) if values else float("nan")
    return means


def evaluate(images, factors, world=data):
    """Judge generated images (N, H, W, 3) in [0, 1] (uint8 accepted) asked for `factors` (N, 3).

    Returns the three readings per composition, acc (composition), fidelity and probe_acc;
    the split means of acc as seen / level1 / level2; malformed, the fraction that is not
    one legible object; and retrieval_1nn / retrieval_5nn, the fraction whose nearest real
    image(s), among real images of all eight compositions, have the asked composition. A world
    with a retrieval of its own (clips.py's CRA, the study's Table 12) adds it under "cra".
    """
    factors = np.asarray(factors, dtype=np.int64)
    judged = readings(images, factors, world)
    reference = instruments(world)
    distances = torch.cdist(centred_pixels(as_float(images)), reference["reference"])
    neighbours = distances.topk(5, largest=False).indices
    same = (reference["reference_bits"][neighbours.numpy()] == factors[:, None]).all(2)   # (N, 5)
    codes = np.array([world.bits_to_code(f) for f in factors])
    present = [c for c in world.COMPOSITIONS if (codes == c).any()]
    per_code = {name: {c: float(judged[key][codes == c].mean()) for c in present}
                for name, key in (("acc", "composed"), ("fidelity", "precise"))}
    per_code["probe_acc"] = {c: probe.probe_accuracy(judged["probe_factors"][codes == c])
                             for c in present}
    extra = {} if world is data else {"substitution": substitutions(judged, factors, codes, world)}
    if hasattr(world, "cra"):
        extra["cra"] = world.cra(as_float(images), factors)
    return {**per_code, **split_means(per_code["acc"], world),
            "malformed": float(1 - judged["legible"].mean()),
            "retrieval_1nn": float(same[:, 0].mean()),
            "retrieval_5nn": float((same.sum(1) >= 3).mean()), **extra}


def substitutions(judged, factors, codes, world):
    """{code: {"factor=value": count}}: for the legible samples of a code that are not what was
    asked, which value each wrong factor came out as ("color=blue": a purple sphere drawn blue)."""
    found = {}
    wrong = judged["legible"] & ~judged["composed"]
    for code, asked, read in zip(codes[wrong], factors[wrong], judged["read"][wrong]):
        counts = found.setdefault(str(code), {})
        for f in np.flatnonzero(asked != read):
            key = f"{world.FACTORS[f]}={world.VALUES[f][read[f]]}"
            counts[key] = counts.get(key, 0) + 1
    return found


def describe(code):
    """'110' -> 'blue big triangle' (data.describe, the world's own words)."""
    return data.describe(code)


# ---------------------------------------------------------------- agreement with a person
VERDICTS = ("right composition", "wrong composition", "not one legible object")


def verdicts(images, factors):
    """The judge's verdict on each sample, as an index into VERDICTS."""
    judged = readings(images, factors)
    return np.where(~judged["legible"], 2, np.where(judged["composed"], 0, 1))


def gallery_agreement(path=GALLERY):
    """(fraction of the gallery where the judge says what the person said, 3x3 confusion counts
    with the person's label as the row and the judge's verdict as the column)."""
    gallery = np.load(path)
    judge_says, person_says = verdicts(gallery["images"], gallery["factors"]), gallery["labels"]
    confusion = np.zeros((3, 3), np.int64)
    np.add.at(confusion, (person_says, judge_says), 1)
    return float((judge_says == person_says).mean()), confusion


# ------------------------------------------------------------------------------------ main
def _table(rows):
    print(f"{'images':<34}{'reading':>10}" + "".join(f"{c:>6}" for c in data.COMPOSITIONS)
          + f"{'illegible':>11}")
    for name, result in rows:
        for i, (key, label) in enumerate((("acc", "composed"), ("fidelity", "fidelity"),
                                          ("probe_acc", "probe"))):
            print(f"{name if i == 0 else '':<34}{label:>10}"
                  + "".join(f"{100 * result[key][c]:6.1f}" for c in data.COMPOSITIONS)
                  + (f"{100 * result['malformed']:10.1f}%" if i == 0 else ""))


def main(argv=None):
    import argparse
    import time
    parser = argparse.ArgumentParser(description="The judge's report: the three readings on real "
                                     "images and tokenizer round trips, the calibration table and "
                                     "the agreement with a person on the gallery. To judge a run's "
                                     "kept samples again: python tools/rejudge.py RUN_FOLDER.")
    parser.parse_args(argv)
    start = time.time()
    load_reader()
    print(f"factor reader ready in {time.time() - start:.1f}s (cached under {data.CACHE_DIR})\n")
    images, bits, _ = data.make_dataset(data.COMPOSITIONS, 250, probe.HELD_OUT_SEED)
    noisy = images + np.random.default_rng(0).normal(0, 0.05, images.shape).astype(np.float32)
    rows = [("real (held out)", evaluate(images, bits)),
            ("real + noise sigma 0.05", evaluate(noisy.clip(0, 1), bits))]
    for name in ("codebook", "pca"):
        tokenizer = tokenizers.load_tokenizer(name)
        roundtrip = tokenizer.decode(tokenizer.encode(images))
        rows.append((f"{name} round trip ({tokenizer.patch}x{tokenizer.patch} patches)",
                     evaluate(roundtrip, bits)))
    print("the three readings (%) per composition, 250 images each")
    _table(rows)
    from worlds.shapes2d_calibration import calibration_images  # the suite that defines legible
    accepted, rejected, asked = calibration_images(400, seed=1)
    print("\ncalibration (400 images a kind): accepted must be >= 98% composed, "
          "rejected >= 97% not legible")
    for name, batch in accepted.items():
        composed = readings(batch, asked)["composed"].mean()
        print(f"  accept  {name:<48} {100 * composed:5.1f}% composed")
    for name, batch in rejected.items():
        illegible = 1 - readings(batch, asked)["legible"].mean()
        print(f"  reject  {name:<48} {100 * illegible:5.1f}% not legible")
    if os.path.exists(GALLERY):
        agreement, confusion = gallery_agreement()
        print(f"\ngallery: the judge agrees with a person on {100 * agreement:.1f}% "
              f"of {confusion.sum()} model samples")
        print(f"  {'person / judge':<24}" + "".join(f"{v.split()[0]:>8}" for v in VERDICTS))
        for verdict, row in zip(VERDICTS, confusion):
            print(f"  {verdict:<24}" + "".join(f"{x:8d}" for x in row))
    print(f"\n{time.time() - start:.1f}s in all")


if __name__ == "__main__":
    main()
