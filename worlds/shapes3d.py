"""Shapes3D with super groups: the study's many-valued world (its Table 11), in data.py's interface.

One solid on a black background, 32x32 RGB. Three factors, in this order:

    factor | values                                              | super group 1
    colour | red orange yellow lime-green green cyan blue indigo  | indigo, purple, pink
           | purple pink (hues 36 degrees apart, from red at 0)   |
    shape  | cube cylinder sphere                                 | sphere
    size   | 0 ... 7 (ordinal: half-height 4.0 + 1.2 k pixels)    | 6, 7

A code is three digits, one value index per factor: "726" is an indigo sphere of size 6, "000" a
red cube of size 0. With k the number of factors whose value is in super group 1, generators train
on SEEN (k <= 1: 84 + 106 = 190 codes) and are judged on LEVEL1 (k = 2: 44) and LEVEL2 (k = 3: 6).

The solids are drawn as shaded 2D stand-ins, lit from the upper left, so that a person tells them
apart at 32x32 without a 3D renderer: a cube in oblique view (a bright top, a mid front, a dark
right side), a cylinder (a flat elliptic top over a body shaded across), a sphere (a disc shaded
by its normal). Floor and wall are plain black: the study varies them without conditioning on
them, and a plain canvas keeps Shapes2D's, so the codebook's (mask x colour) patches serve
unchanged. Latents, one row an image:

    latents[:, 0]   hue in degrees, drawn within +-5 of the class hue
    latents[:, 1]   shape index (0 cube, 1 cylinder, 2 sphere)
    latents[:, 2]   half-height s in pixels, within +-0.25 of the class size
    latents[:, 3:5] centre (x, y) in pixels, within +-1 of the image centre
"""
import hashlib
import itertools
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the top
import data

NAME = "shapes3d"
IMAGE_SIZE = 32
FACTORS = ("color", "shape", "size")
VALUES = (("red", "orange", "yellow", "lime green", "green", "cyan", "blue", "indigo", "purple",
           "pink"), ("cube", "cylinder", "sphere"), tuple(str(k) for k in range(8)))
GROUP1 = ((7, 8, 9), (2,), (6, 7))            # the values of super group 1, per factor
COMPOSITIONS = tuple(f"{c}{s}{z}" for c, s, z in itertools.product(range(10), range(3), range(8)))


def code_to_bits(code):
    """'726' -> (7, 2, 6); refuses anything that is not one of the 240 codes."""
    if code not in COMPOSITIONS:
        raise ValueError(f"unknown composition code {code!r} of {NAME}: three digits, colour "
                         "0-9, shape 0-2, size 0-7")
    return tuple(int(c) for c in code)


def bits_to_code(bits):
    return "".join(str(int(b)) for b in bits)


def group1_count(code):
    """k: how many of the code's factors take a value of super group 1."""
    return sum(v in group for v, group in zip(code_to_bits(code), GROUP1))


SEEN = tuple(c for c in COMPOSITIONS if group1_count(c) <= 1)
LEVEL1 = tuple(c for c in COMPOSITIONS if group1_count(c) == 2)
LEVEL2 = tuple(c for c in COMPOSITIONS if group1_count(c) == 3)
SPLITS = {"seen": SEEN, "level1": LEVEL1, "level2": LEVEL2}
GROUPS = {"group0": tuple(c for c in SEEN if group1_count(c) == 0),        # the tables' rows
          "group1": tuple(c for c in SEEN if group1_count(c) == 1), "level1": LEVEL1,
          "level2": LEVEL2}
COND_MODES = ("continuous", "discrete", "dropout", "discrete-dropout")

HUE_STEP, HUE_JITTER = 36.0, 5.0              # degrees
SIZES = 4.0 + 1.2 * np.arange(8)              # class half-heights (pixels)
SIZE_JITTER, POSITION_JITTER = 0.25, 1.0      # pixels
LIGHT = {"cube": (1.0, 0.75, 0.45), "cylinder_top": 0.7}   # face shades: top, front, side
PROBE_PER_CODE, HELD_OUT_PER_CODE = 30, 20    # real images of each of the 240 for the readers
RUN_DEFAULTS = dict(train_per_comp=100,        # 19,000 training images, Shapes2D's 20,000
                    samples_per_comp=8)        # requests(8): 590 samples an evaluation
TOKENIZERS = {"codebook": dict(n_masks=512, n_colors=10, normalize=True, per_code=20),
              "pca": dict(per_code=20)}        # 3,800 seen images (Shapes2D: 2,000)
DEFINITION = (IMAGE_SIZE, HUE_STEP, HUE_JITTER, SIZES.tolist(), SIZE_JITTER, POSITION_JITTER,
              sorted(LIGHT.items()))            # and the renderer's pictures: definition()


def split_of(code):
    code_to_bits(code)
    return next(name for name, codes in SPLITS.items() if code in codes)


def describe(code):
    """'726' -> 'indigo sphere 6'."""
    color, shape, size = code_to_bits(code)
    return f"{VALUES[0][color]} {VALUES[1][shape]} {size}"


# ------------------------------------------------------------------ narrower seen sets
# How much diversity does composition need? `--seen-count N` trains on the first N codes of
# seen_order() and judges on the same 44 + 6 novel codes; the training set keeps its 19,000 images.
SMALLEST_SEEN = 10       # six codes carry super group 1's six values (one each), four the rest
SEEN_COUNTS = (12, 24, 34, 48, 95, 190)  # the sweep: halving from 190, and 34 where DiT rises
TRAINING_IMAGES = 19_000
_NARROWED = {}


def seen_order(seed=0):
    """The 190 seen codes in the order the nested seen sets take them. Each next code shows the
    most values not shown yet, then the values shown least often so far (ties: a fixed draw), so
    every value of every factor appears by the tenth code and each value is then seen in about as
    many combinations as any other. A seen code holds at most one value of super group 1, so each
    of them appears beside values of group 0."""
    left = [str(code) for code in np.random.default_rng(seed).permutation(SEEN)]
    counts = [np.zeros(len(values)) for values in VALUES]
    order = []
    while left:
        def rank(code):
            shown = [counts[f][v] for f, v in enumerate(code_to_bits(code))]
            return (-sum(c == 0 for c in shown), sum(shown))
        code = left.pop(min(range(len(left)), key=lambda i: rank(left[i])))
        order.append(code)
        for f, v in enumerate(code_to_bits(code)):
            counts[f][v] += 1
    return tuple(order)


def narrowed(count):
    """This world with generators learning from the first `count` codes of seen_order() only (SEEN,
    in the world's code order), their images per code scaled so the training set stays 19,000
    images. The splits, the evaluation and the readers stay the world's: the test set never
    changes, and the tables' "seen" still means the 190 codes with k <= 1."""
    if not SMALLEST_SEEN <= count <= len(SEEN):
        raise ValueError(f"--seen-count {count} is outside {SMALLEST_SEEN}-{len(SEEN)}: "
                         f"fewer than {SMALLEST_SEEN} codes cannot show every value")
    if count not in _NARROWED:
        chosen = set(seen_order()[:count])
        world = type(sys.modules[__name__])(NAME, __doc__)
        vars(world).update({k: v for k, v in globals().items() if not k.startswith("__")})
        world.SEEN = tuple(code for code in SEEN if code in chosen)
        world.RUN_DEFAULTS = dict(RUN_DEFAULTS, train_per_comp=round(TRAINING_IMAGES / count))
        world.TOKENIZERS = {name: dict(settings, per_code=round(settings["per_code"] * len(SEEN)
                                                                / count))
                            for name, settings in TOKENIZERS.items()}      # 3,800 images still

        def training_set(n_per_code=100, seed=0):
            return make_dataset(world.SEEN, n_per_code, seed)
        world.training_set = training_set
        _NARROWED[count] = world
    return _NARROWED[count]


def requests(n_per_code):
    """What an evaluation asks for (N, 3): every novel code n_per_code times, every seen code
    max(1, n_per_code // 8) times, so that the grid has every cell and the seen mean rests on
    190 or more samples while a 2-core CPU keeps up (8: 590 samples)."""
    counts = [n_per_code if c not in SEEN else max(1, n_per_code // 8) for c in COMPOSITIONS]
    return np.repeat([code_to_bits(c) for c in COMPOSITIONS], counts, 0)


# ----------------------------------------------------------------------------- rendering
def hue_rgb(hue):
    """Fully saturated, full-value RGB (N, 3) of hues in degrees (N,): HSV with S = V = 1."""
    k = (np.array([5.0, 3.0, 1.0]) + np.asarray(hue, dtype=np.float64)[:, None] / 60) % 6
    return 1 - np.clip(np.minimum(k, 4 - k), 0, 1)


def sample_latents(bits, rng):
    """Latents (N, 5) for the asked value indices (N, 3), drawn around the class values."""
    bits = np.asarray(bits, dtype=np.int64).reshape(-1, 3)
    n = len(bits)
    hue = (HUE_STEP * bits[:, 0] + rng.uniform(-HUE_JITTER, HUE_JITTER, n)) % 360
    size = SIZES[bits[:, 2]] + rng.uniform(-SIZE_JITTER, SIZE_JITTER, n)
    centre = IMAGE_SIZE / 2 + rng.uniform(-POSITION_JITTER, POSITION_JITTER, (n, 2))
    return np.concatenate([hue[:, None], bits[:, 1:2], size[:, None], centre],
                          1).astype(np.float32)


def _grid(cx, cy):
    """Pixel-centre offsets (x, y) from each centre: two (N, H, W) arrays."""
    grid = np.arange(IMAGE_SIZE, dtype=np.float32) + 0.5
    return (grid[None, None, :] - cx[:, None, None]), (grid[None, :, None] - cy[:, None, None])


def _polygon(x, y, corners):
    """Signed distance (pixels, negative inside) to a convex polygon whose corners (N, K, 2) run
    clockwise on screen: the largest distance past any of its edges."""
    distance = -np.inf
    for a, b in zip(corners.transpose(1, 0, 2), np.roll(corners, -1, 1).transpose(1, 0, 2)):
        edge = b - a
        normal = np.stack([edge[:, 1], -edge[:, 0]], 1) / np.linalg.norm(edge, axis=1)[:, None]
        past = ((x - a[:, 0, None, None]) * normal[:, 0, None, None]
                + (y - a[:, 1, None, None]) * normal[:, 1, None, None])
        distance = np.maximum(distance, past)
    return distance


def _ellipse(x, y, rx, ry):
    """Approximate signed distance to an axis-aligned ellipse (f / |grad f|, exact on the axes)."""
    u, v = x / rx[:, None, None], y / ry[:, None, None]
    radius = np.sqrt(u ** 2 + v ** 2).clip(1e-6)
    gradient = np.sqrt((u / rx[:, None, None]) ** 2 + (v / ry[:, None, None]) ** 2) / radius
    return (radius - 1) / gradient.clip(1e-6)


def shade_maps(shape, size, cx, cy):
    """The grey picture (N, H, W) of each solid: coverage times the shade of its face, in [0, 1].
    A colour image is this times the hue's RGB."""
    shape, size = np.asarray(shape).round().astype(np.int64), np.asarray(size, dtype=np.float32)
    x, y = _grid(np.asarray(cx, dtype=np.float32), np.asarray(cy, dtype=np.float32))
    cover = data.coverage_of
    out = np.zeros(x.shape, np.float32)
    # cube, oblique: front square a, depth d = 0.35 a up and right; height a + d = 2 s
    a = 2 * size / 1.35
    d, x0, y0 = 0.35 * a, -size, -size
    def quad(*points):
        return np.stack([np.stack([px, py], 1) for px, py in points], 1)
    top = quad((x0, y0 + d), (x0 + d, y0), (x0 + a + d, y0), (x0 + a, y0 + d))
    front = quad((x0, y0 + d), (x0 + a, y0 + d), (x0 + a, y0 + d + a), (x0, y0 + d + a))
    side = quad((x0 + a, y0 + d), (x0 + a + d, y0), (x0 + a + d, y0 + a), (x0 + a, y0 + d + a))
    cube = sum(shade * cover(_polygon(x, y, face)) for shade, face in
               zip(LIGHT["cube"], (top, front, side)))
    # cylinder: radius r = 0.8 s, elliptic ends r x 0.3 r, the top drawn over the body
    r = 0.8 * size
    ry = 0.3 * r
    top_y, bottom_y = y + size[:, None, None] - ry[:, None, None], y - size[:, None, None] \
        + ry[:, None, None]
    top_cover = cover(_ellipse(x, top_y, r, ry))
    rectangle = np.maximum(np.abs(x) - r[:, None, None], np.maximum(-top_y, bottom_y))
    body_cover = cover(np.minimum(rectangle, _ellipse(x, bottom_y, r, ry)))
    nx = (x / r[:, None, None]).clip(-1, 1)
    body_shade = 0.3 + 0.65 * np.maximum(0, -0.6 * nx + 0.8 * np.sqrt(1 - nx ** 2))
    cylinder = top_cover * LIGHT["cylinder_top"] + (1 - top_cover) * body_cover * body_shade
    # sphere: Lambert's shade of the normal, light from the upper left and front
    u, v = x / size[:, None, None], y / size[:, None, None]
    nz = np.sqrt((1 - u ** 2 - v ** 2).clip(0, 1))
    sphere_shade = 0.3 + 0.7 * np.maximum(0, (-0.45 * u - 0.55 * v + 0.70 * nz) / 1.0)
    sphere = cover(np.sqrt(x ** 2 + y ** 2) - size[:, None, None]) * sphere_shade.clip(0, 1)
    for index, picture in enumerate((cube, cylinder, sphere)):
        out = np.where((shape == index)[:, None, None], picture, out)
    return out.clip(0, 1).astype(np.float32)


def render(latents):
    """Images (N, H, W, 3) float32 in [0, 1] from latents (N, 5)."""
    latents = np.asarray(latents, dtype=np.float32)
    shades = shade_maps(latents[:, 1], latents[:, 2], latents[:, 3], latents[:, 4])
    return (shades[..., None] * hue_rgb(latents[:, 0])[:, None, None]).astype(np.float32)


def make_dataset(codes, n_per_code, seed):
    """images (N, H, W, 3) float32, value indices (N, 3) int64, latents (N, 5)."""
    rng = np.random.default_rng(seed)
    bits = np.repeat(np.array([code_to_bits(c) for c in codes]), n_per_code, axis=0)
    bits = bits[rng.permutation(len(bits))]
    latents = sample_latents(bits, rng)
    return render(latents), bits, latents


def training_set(n_per_code=100, seed=0):
    """What a generator (and a tokenizer's fit) may learn from: seen compositions only."""
    return make_dataset(SEEN, n_per_code, seed)


def definition():
    """What the caches of this world's fitted probes and tokenizers are keyed by
    (data.cache_path): DEFINITION, its named constants, and a fingerprint of the renderer's own
    pictures of every code, so that a change to a drawing's numbers (a face's shade, a cylinder's
    radius) refits them too."""
    latents = sample_latents(requests(1), np.random.default_rng(0))
    pictures = np.round(render(latents), 4).tobytes()
    return DEFINITION + (hashlib.sha1(pictures).hexdigest(),)


# -------------------------------------------------------------------------- conditioning
# The condition is a vector of 8 values: the hue on the circle (cos, sin), the shape one-hot, the
# size scaled, the position scaled.
COND_GROUPS = (("color", 0, 2), ("shape", 2, 5), ("size", 5, 6), ("position", 6, 8))


def class_bits(latents):
    """The value indices (B, 3) int64 that latents (B, 5) render: nearest class hue and size."""
    latents = torch.as_tensor(latents)
    color = torch.round(latents[:, 0] / HUE_STEP).long() % 10
    size = torch.round((latents[:, 2] - SIZES[0]) / (SIZES[1] - SIZES[0])).long().clamp(0, 7)
    return torch.stack([color, latents[:, 1].round().long(), size], 1)


def conditioning(latents, mode, drop_prob=0.1, rng=None, train=True):
    """(values (B, 8), present (B, 4)) on rng's device, for the modes of data.conditioning:
    continuous (the exact hue, shape, size and position), discrete (the class hue and size,
    position hidden), dropout and discrete-dropout (a factor hidden with drop_prob in training)."""
    if mode not in COND_MODES:
        raise ValueError(f"unknown conditioning mode {mode!r} of {NAME}; choose from "
                         f"{', '.join(COND_MODES)}")
    device = rng.device if rng is not None else torch.device("cpu")
    latents = torch.as_tensor(latents, dtype=torch.float32).to(device)
    hue, size, centre = latents[:, 0], latents[:, 2], latents[:, 3:5]
    present = torch.ones(len(latents), len(COND_GROUPS), dtype=torch.bool, device=device)
    if mode.startswith("discrete"):
        bits = class_bits(latents)
        hue = HUE_STEP * bits[:, 0].float()
        size = SIZES[0] + (SIZES[1] - SIZES[0]) * bits[:, 2].float()
        present[:, 3] = False
    if mode.endswith("dropout") and train:
        dropped = torch.rand(len(latents), 3, generator=rng, device=device) < drop_prob
        present[:, :3] &= ~dropped
    angle = torch.deg2rad(hue)
    shape = F.one_hot(latents[:, 1].round().long(), 3).float()
    values = torch.cat([angle.cos()[:, None], angle.sin()[:, None], shape,
                        ((size - 8.2) / 4.2)[:, None], centre - IMAGE_SIZE / 2], 1)
    return values, present


# ---------------------------------------------------------------------------- the readings
# What a person reads in a sample: one solid, one hue throughout, a shape and a size the renderer
# draws. The calibration suite (calibration_images) bounds the thresholds; within its bounds they
# are set by labels people gave model samples (results/readings/).
LEGIBLE = {
    "min_area": 6,             # pixels of the object (fewer: blank)
    "max_second_area": 1,      # pixels of any second object
    "max_other_hue": 0.08,     # share of the object's coloured pixels in another class's hue
    "max_other_patch": 4,      # pixels of the largest connected patch of another class's hue
    "min_saturation": 0.6,     # the object's chroma / value: a grey is no hue
    "gain": (0.75, 1.3),       # the object's brightness against the renderer's
    "max_local": 2.1,          # misfit summed over any 3x3 window (holes, bites, morphs, spikes)
    "min_shape_margin": 0.38,  # 1 - (best fit's misfit / the best other shape's): not in between
    "max_beyond": 1.2,         # pixels past the smallest or largest class size, a class step:
}                              # size is ordinal, so a person calls a solid above 7 "the big one"
MAX_BAD_PIXELS, BAD_PIXEL = 8, 0.25      # fidelity: the renderer's picture, within these
FIT_SIZES = np.arange(2.0, 15.01, 0.2)   # half-heights the fits try: past max_beyond both ways
FIT_CENTRES = 16 + np.arange(-2, 2.1, 0.5)
_TEMPLATES = {}


def templates():
    """Grey pictures (K, H*W) of each shape at the half-heights FIT_SIZES and centres FIT_CENTRES
    (both ways), in that order, and their (shape, size, cx, cy) (K, 4): what fits read."""
    if not _TEMPLATES:
        grid = np.array(list(itertools.product(range(3), FIT_SIZES, FIT_CENTRES, FIT_CENTRES)),
                        np.float32)
        pictures = np.concatenate([shade_maps(*part.T) for part in np.array_split(grid, 16)])
        flat = pictures.reshape(len(grid), -1)
        _TEMPLATES.update(pictures=torch.as_tensor(flat), norms=torch.as_tensor(
            (flat ** 2).sum(1)), latents=grid)
    return _TEMPLATES


def pixel_hues(images):
    """HSV hue in degrees (N, H, W) of every pixel of images (N, H, W, 3)."""
    r, g, b = np.moveaxis(images, -1, 0)
    value, chroma = images.max(-1), images.max(-1) - images.min(-1)
    chroma = chroma.clip(1e-6)
    hue = np.where(value == r, ((g - b) / chroma) % 6,
                   np.where(value == g, (b - r) / chroma + 2, (r - g) / chroma + 4))
    return 60 * hue


def refined_size_step(error, best):
    """The fitted half-height's correction (N,) in pixels, within half a grid step: the vertex of
    the parabola through the misfit (N, K) of the best template (N,) and of its two neighbours in
    size (same shape and centre); none at the grid's ends or where the misfit bends down."""
    step, stride = FIT_SIZES[1] - FIT_SIZES[0], len(FIT_CENTRES) ** 2
    index = (best // stride) % len(FIT_SIZES)                # the best template's size index
    inside = (index > 0) & (index < len(FIT_SIZES) - 1)
    rows = torch.arange(len(best))
    below = error[rows, torch.where(inside, best - stride, best)]
    at, above = error[rows, best], error[rows, torch.where(inside, best + stride, best)]
    curve = below - 2 * at + above
    shift = torch.where(inside & (curve > 0), 0.5 * (below - above) / curve.clamp(min=1e-12), 0.0)
    return (step * shift.clamp(-0.5, 0.5)).numpy()


def read_solids(images):
    """What a person reads in each image (N, H, W, 3) in [0, 1]: the value indices (colour, shape,
    size) and the measurements that say whether it is one legible solid."""
    n = len(images)
    value, chroma = images.max(-1), images.max(-1) - images.min(-1)
    covered = (value > 0.2) & (chroma > 0.5 * value)                   # coloured, not grey
    labels = data.components(covered)
    areas = np.stack([np.bincount(labelled.ravel(), minlength=labels[0].size + 1)[1:]
                      for labelled in labels])
    order = np.argsort(-areas, 1)
    largest = labels == order[:, :1, None] + 1
    near = F.max_pool2d(torch.as_tensor(largest, dtype=torch.float32)[:, None], 5, 1, 2)[:, 0]
    # colour: the chroma-weighted circular mean of the object's hues, and who disagrees with it
    hues, strong = pixel_hues(images), largest & (chroma > 0.35)
    angle = np.deg2rad(hues)
    weight = chroma * strong
    mean = np.rad2deg(np.arctan2((np.sin(angle) * weight).sum((1, 2)),
                                 (np.cos(angle) * weight).sum((1, 2)))) % 360
    color = np.round(mean / HUE_STEP).astype(np.int64) % 10
    other = strong & (np.round(hues / HUE_STEP).astype(np.int64) % 10 != color[:, None, None])
    solid = largest & (value > 0.3)
    saturation = np.array([np.median(c[s] / v[s]) if s.any() else 0.0
                           for c, v, s in zip(chroma, value, solid)])
    # shape, size and place: the renderer's grey picture that fits the object's value best
    brightness = torch.as_tensor(value * near.numpy(), dtype=torch.float32).reshape(n, -1)
    found = templates()
    dot = brightness @ found["pictures"].T                                   # (N, K)
    error = (brightness ** 2).sum(1, keepdim=True) - dot ** 2 / found["norms"]
    best = error.argmin(1)
    gain = dot[torch.arange(n), best] / found["norms"][best]
    fit = found["latents"][best.numpy()].copy()                              # (N, 4)
    fit[:, 1] += refined_size_step(error, best)         # between the grid's sizes: a parabola
    misfit = brightness - gain[:, None] * found["pictures"][best]
    # a shape in between two: the best fit of another shape does nearly as well
    per_shape = error.reshape(n, 3, -1).amin(2).clamp(min=1e-6)              # (N, 3)
    two = per_shape.sort(1).values
    margin = (1 - two[:, 0] / two[:, 1]).numpy()
    local = 9 * F.avg_pool2d(misfit.reshape(n, 1, IMAGE_SIZE, IMAGE_SIZE), 3, 1, 1).abs()
    size = np.abs(fit[:, 1, None] - SIZES).argmin(1)                          # the nearest class
    return {"bits": np.stack([color, fit[:, 0].astype(np.int64), size], 1),
            "area": areas[np.arange(n), order[:, 0]],
            "second_area": areas[np.arange(n), order[:, 1]],
            "other_hue": other.sum((1, 2)) / strong.sum((1, 2)).clip(1),
            "other_patch": np.array([np.bincount(lab.ravel(), minlength=2)[1:].max()
                                     for lab in data.components(other)]),
            "saturation": saturation, "gain": gain.numpy(), "hue": mean, "fit": fit,
            "shape_margin": margin,
            "local": local.reshape(n, -1).amax(1).numpy(),
            "beyond": np.maximum(0, np.maximum(SIZES[0] - fit[:, 1], fit[:, 1] - SIZES[-1]))}


def checks(solids, rule=LEGIBLE):
    """Each test legible() asks of a solid, by name: (N,) True where the solid passes it."""
    return {
        "an object": (solids["area"] >= rule["min_area"]),
        "no second object": (solids["second_area"] <= rule["max_second_area"]),
        "one hue": ((solids["other_hue"] <= rule["max_other_hue"])
                    & (solids["other_patch"] <= rule["max_other_patch"])),
        "coloured": (solids["saturation"] >= rule["min_saturation"]),
        "lit as drawn": (solids["gain"] >= rule["gain"][0]) & (solids["gain"] <= rule["gain"][1]),
        "no bite": (solids["local"] <= rule["max_local"]),
        "one shape": (solids["shape_margin"] >= rule["min_shape_margin"]),
        "a drawn size": (solids["beyond"] <= rule["max_beyond"]),
    }


def legible(solids, rule=LEGIBLE):
    """One solid of one hue, a shape and a size the renderer draws."""
    return np.logical_and.reduce(list(checks(solids, rule).values()))


def readings(images, factors):
    """Per sample (judge.readings serves these): composed, one legible solid of the asked values;
    precise (fidelity), composed and the renderer's picture of what was read within MAX_BAD_PIXELS
    pixels off by more than BAD_PIXEL; legible; read, the value indices read (N, 3)."""
    solids = read_solids(images)
    ok = legible(solids)
    composed = ok & (solids["bits"] == factors).all(1)
    fit = solids["fit"]
    drawn = render(np.concatenate([solids["hue"][:, None], fit], 1))
    bad = (np.abs(drawn - images).max(-1) > BAD_PIXEL).sum((1, 2))
    return {"composed": composed, "precise": composed & (bad <= MAX_BAD_PIXELS), "legible": ok,
            "read": solids["bits"]}


# ------------------------------------------------------------------------ the calibration
def calibration_images(n=200, seed=1):
    """Kinds of images a person accepts as the asked solid and kinds a person rejects as one
    legible solid, n of each, all asked for the same codes: (accepted {kind: images},
    rejected {kind: images}, asked (n, 3)). The readings' thresholds are set on these."""
    rng = np.random.default_rng(seed)
    bits = np.array([code_to_bits(c) for c in rng.choice(COMPOSITIONS, n)])
    latents = sample_latents(bits, rng)
    clean = render(latents)
    hue, shape, size, cx, cy = latents.T
    rgb = hue_rgb(hue)[:, None, None]

    def with_hue(offset):
        return render(np.stack([hue + offset, shape, size, cx, cy], 1))

    def blur(images):
        return F.avg_pool2d(torch.as_tensor(images).permute(0, 3, 1, 2), 3, 1, 1,
                            count_include_pad=False).permute(0, 2, 3, 1).numpy()

    grey = shade_maps(shape, size, cx, cy)
    near = np.stack(np.meshgrid(np.arange(IMAGE_SIZE), np.arange(IMAGE_SIZE)), -1) + 0.5
    inside = grey > 0.1
    side = np.where(rng.uniform(size=n) < 0.5, -1, 1) * HUE_STEP             # a neighbour hue
    neighbour = with_hue(side)
    # a patch: the object's pixels within 0.45 s of a point inside it take a neighbour hue
    point = np.stack([cx, cy], 1) + rng.uniform(-0.4, 0.4, (n, 2)) * size[:, None]
    patch = (np.linalg.norm(near[None] - point[:, None, None], axis=-1)
             < 0.45 * size[:, None, None]) & inside
    other_shape = (shape + rng.integers(1, 3, n)) % 3
    morph = 0.5 * grey + 0.5 * shade_maps(other_shape, size, cx, cy)
    hole = np.linalg.norm(near[None] - np.stack([cx, cy], 1)[:, None, None], axis=-1) < 1.6
    bite = (near[None, ..., 0] > cx[:, None, None]) & (near[None, ..., 1] > cy[:, None, None])
    first = latents.copy()                                  # room for a second solid: smaller
    first[:, 2], first[:, 3:5] = np.minimum(size, SIZES[2]), 13.0
    second = first.copy()
    second[:, 2], second[:, 3:5] = SIZES[0], 27.5
    noise = rng.normal(0, 0.04, clean.shape)
    specks = np.zeros_like(clean)
    specks[np.arange(n)[:, None], rng.integers(0, 4, (n, 3)), rng.integers(0, 32, (n, 3))] = 0.6
    accepted = {
        "clean renders": clean,
        "noisy (sigma 0.04)": (clean + noise).clip(0, 1),
        "blurred (half a 3x3 box)": 0.5 * clean + 0.5 * blur(clean),
        "dimmed to 85%": 0.85 * clean,
        "hue 9 degrees off the class": with_hue(np.where(side > 0, 9.0, -9.0)),
        "size 0.35 px off the class": render(np.stack(
            [hue, shape, SIZES[bits[:, 2]] + np.where(side > 0, 0.35, -0.35), cx, cy], 1)),
        "grey specks on the floor": np.maximum(clean, specks),
    }
    rejected = {
        "a patch of a neighbour hue": np.where(patch[..., None], neighbour, clean),
        "half in a neighbour hue": np.where((near[None, ..., 0] < cx[:, None, None])[..., None],
                                            neighbour, clean),
        "between two shapes": morph[..., None] * rgb,
        "a quarter bitten off": np.where(bite[..., None], 0, clean),
        "a hole": np.where(hole[..., None], 0, clean),
        "two solids": np.maximum(render(first), render(second)),
        "grey (no hue)": grey[..., None] * (0.55 + 0.45 * rgb) * 0.9,
        "blank": np.zeros_like(clean),
    }
    return accepted, rejected, bits


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description="This world's readings on its calibration "
                                     "kinds: the share composed of kinds a person accepts, the "
                                     "share not legible of kinds a person rejects.")
    parser.add_argument("--n", type=int, default=200, help="images of each kind")
    args = parser.parse_args(argv)
    accepted, rejected, asked = calibration_images(args.n)
    for name, images in accepted.items():
        composed = readings(images.astype(np.float32), asked)["composed"].mean()
        print(f"  accept  {name:<32} {100 * composed:5.1f}% composed")
    for name, images in rejected.items():
        illegible = 1 - readings(images.astype(np.float32), asked)["legible"].mean()
        print(f"  reject  {name:<32} {100 * illegible:5.1f}% not legible")


if __name__ == "__main__":
    main()
