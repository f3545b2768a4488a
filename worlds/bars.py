"""Bars: a world a student writes in an afternoon, to data.py's interface (course assignment A11).

One bar on a black background, 32x32 RGB. Three binary factors, in this order:

    bit | factor      | 0          | 1
    1st | orientation | horizontal | vertical
    2nd | color       | green      | orange
    3rd | length      | long       | short

A code is its bits, as Shapes2D's: "110" is a vertical orange long bar. Generators train on SEEN
= 000 001 010 100; LEVEL1 (011 101 110) is one flip from a seen code, LEVEL2 (111, a vertical
orange short bar) two flips from every seen one. Latents, one row an image:

    latents[:, 0]   orientation bit
    latents[:, 1:4] RGB colour, within COLOR_JITTER of the class colour per channel
    latents[:, 4]   the bar's length in pixels, drawn from its class's range
    latents[:, 5:7] centre (x, y), within POSITION_JITTER of the image centre

The reading (readings) fits the renderer's own bar to an image, its orientation, length and
place by the image's moments and its colour as the mean of its pixels, and calls the image one
legible bar when the fitted bar reproduces it within MAX_BAD_PIXELS pixels. Its rules are the
renderer's tolerance, set by hand on the renderer's own bars: no person has labelled a model's
bars, as people have for shapes3d.py and clips.py. A thinner or two-tone bar a person would call
"a short vertical orange bar" can be refused: look at the samples before trusting the number.

    python dit.py --world bars        # does DiT draw 111, the bar it never saw?
"""
import numpy as np
import torch

import data

NAME = "bars"
IMAGE_SIZE = 32
FACTORS = ("orientation", "color", "length")
VALUES = (("horizontal", "vertical"), ("green", "orange"), ("long", "short"))
COMPOSITIONS = tuple(f"{i:03b}" for i in range(8))
SEEN = ("000", "001", "010", "100")
LEVEL1 = ("011", "101", "110")
LEVEL2 = ("111",)
SPLITS = {"seen": SEEN, "level1": LEVEL1, "level2": LEVEL2}
COND_MODES = ("continuous", "discrete", "dropout", "discrete-dropout")

CLASS_COLORS = np.array([[0.20, 0.80, 0.25], [0.90, 0.55, 0.10]])     # green, orange
COLOR_JITTER = 0.08
LENGTHS = np.array([[19.0, 23.0], [9.0, 12.0]])                       # long, short (pixels)
THICKNESS = 4.0
POSITION_JITTER = 3.0
RUN_DEFAULTS, TOKENIZERS = {}, {}         # Shapes2D's: 5,000 training images a code, 32 asked
PROBE_PER_CODE, HELD_OUT_PER_CODE = 300, 100
DEFINITION = (IMAGE_SIZE, CLASS_COLORS.tolist(), COLOR_JITTER, LENGTHS.tolist(), THICKNESS,
              POSITION_JITTER)


def code_to_bits(code):
    """'110' -> (1, 1, 0); refuses anything that is not one of the eight codes."""
    if code not in COMPOSITIONS:
        raise ValueError(f"unknown composition code {code!r} of {NAME}: three bits, e.g. '110'")
    return tuple(int(c) for c in code)


def bits_to_code(bits):
    return "".join(str(int(b)) for b in bits)


def split_of(code):
    code_to_bits(code)
    return next(name for name, codes in SPLITS.items() if code in codes)


def describe(code):
    """'110' -> 'orange long vertical bar'."""
    orientation, color, length = code_to_bits(code)
    return f"{VALUES[1][color]} {VALUES[2][length]} {VALUES[0][orientation]} bar"


def requests(n_per_code):
    """The bits an evaluation asks for, n_per_code of each code in order: (N, 3)."""
    return np.repeat([code_to_bits(c) for c in COMPOSITIONS], n_per_code, 0)


# ----------------------------------------------------------------------------- rendering
def sample_latents(bits, rng):
    """Latents (N, 7) of the asked bits (N, 3), drawn within the class ranges."""
    bits = np.asarray(bits, dtype=np.int64).reshape(-1, 3)
    n = len(bits)
    color = CLASS_COLORS[bits[:, 1]] + rng.uniform(-COLOR_JITTER, COLOR_JITTER, (n, 3))
    low, high = LENGTHS[bits[:, 2]].T
    centre = IMAGE_SIZE / 2 + rng.uniform(-POSITION_JITTER, POSITION_JITTER, (n, 2))
    return np.concatenate([bits[:, :1], color, rng.uniform(low, high)[:, None], centre],
                          1).astype(np.float32)


def coverage(orientation, length, cx, cy):
    """The bar's anti-aliased coverage (N, H, W) in [0, 1]: a box length x THICKNESS, turned
    upright where orientation is 1, its edges a pixel soft (data.coverage_of)."""
    grid = np.arange(IMAGE_SIZE, dtype=np.float32) + 0.5
    x = np.abs(grid[None, None, :] - np.asarray(cx, np.float32)[:, None, None])
    y = np.abs(grid[None, :, None] - np.asarray(cy, np.float32)[:, None, None])
    upright = np.asarray(orientation)[:, None, None] > 0.5
    half_long = np.asarray(length, np.float32)[:, None, None] / 2
    along, across = np.where(upright, y, x), np.where(upright, x, y)
    distance = np.maximum(along - half_long, across - THICKNESS / 2)      # a box's, outside
    return data.coverage_of(distance)


def render(latents):
    """Images (N, H, W, 3) float32 in [0, 1] from latents (N, 7)."""
    latents = np.asarray(latents, dtype=np.float32)
    cover = coverage(latents[:, 0], latents[:, 4], latents[:, 5], latents[:, 6])
    return (cover[..., None] * latents[:, None, None, 1:4]).astype(np.float32)


def make_dataset(codes, n_per_code, seed):
    """images (N, H, W, 3) float32, bits (N, 3) int64, latents (N, 7): deterministic in seed."""
    rng = np.random.default_rng(seed)
    bits = np.repeat(np.array([code_to_bits(c) for c in codes]), n_per_code, axis=0)
    bits = bits[rng.permutation(len(bits))]
    latents = sample_latents(bits, rng)
    return render(latents), bits, latents


def training_set(n_per_code=5000, seed=0):
    """What a generator (and a tokenizer's fit) may learn from: seen compositions only."""
    return make_dataset(SEEN, n_per_code, seed)


# -------------------------------------------------------------------------- conditioning
COND_GROUPS = (("orientation", 0, 1), ("color", 1, 4), ("length", 4, 5), ("position", 5, 7))
COND_CENTRE = np.array([0.5, 0.6, 0.6, 0.2, 16.0, 16.0, 16.0], np.float32)
COND_SCALE = np.array([0.5, 0.4, 0.4, 0.2, 7.0, 3.0, 3.0], np.float32)


def class_bits(latents):
    """The bits (B, 3) int64 that latents (B, 7) render: upright, orange if red > green, short
    below the middle of the two length ranges."""
    latents = torch.as_tensor(latents)
    return torch.stack([latents[:, 0].round(), latents[:, 1] > latents[:, 2],
                        latents[:, 4] < float(LENGTHS[0, 0] + LENGTHS[1, 1]) / 2], 1).long()


def conditioning(latents, mode, drop_prob=0.1, rng=None, train=True):
    """(values (B, 7), present (B, 4)) on rng's device: continuous (the exact latents), discrete
    (class colour and length, position hidden), dropout and discrete-dropout (a factor hidden with
    drop_prob in training)."""
    if mode not in COND_MODES:
        raise ValueError(f"unknown conditioning mode {mode!r} of {NAME}; choose from "
                         f"{', '.join(COND_MODES)}")
    device = rng.device if rng is not None else torch.device("cpu")
    values = torch.as_tensor(latents, dtype=torch.float32).to(device).clone()
    present = torch.ones(len(values), len(COND_GROUPS), dtype=torch.bool, device=device)
    if mode.startswith("discrete"):
        bits = class_bits(values.cpu()).to(device)
        colors, lengths = (torch.as_tensor(a, dtype=torch.float32, device=device)
                           for a in (CLASS_COLORS, LENGTHS.mean(1)))
        values[:, 1:4], values[:, 4] = colors[bits[:, 1]], lengths[bits[:, 2]]
        present[:, 3] = False
    if mode.endswith("dropout") and train:
        dropped = torch.rand(len(values), 3, generator=rng, device=device) < drop_prob
        present[:, :3] &= ~dropped
    centre, scale = (torch.as_tensor(a, device=device) for a in (COND_CENTRE, COND_SCALE))
    return (values - centre) / scale, present


# ---------------------------------------------------------------------------- the reading
MAX_BAD_PIXELS, BAD_PIXEL = 8, 0.25           # a bar is drawn as its fit, within these
MIN_AREA = 20                                 # pixels brighter than 0.2: fewer is no bar


def fit_bars(images):
    """The bar each image (N, H, W, 3) shows, by its moments: (N, 4) orientation (1 where it is
    taller than wide), length (a box of length L spreads L^2 / 12 along itself), centre (x, y),
    each weighted by the pixels' brightness."""
    weight = np.asarray(images, np.float32).max(-1)                            # (N, H, W)
    weight = np.where(weight > 0.3, weight, 0)                    # the bar, not the noise
    mass = weight.sum((1, 2)).clip(1e-6)
    grid = np.arange(IMAGE_SIZE, dtype=np.float32) + 0.5
    cx = (weight * grid[None, None, :]).sum((1, 2)) / mass
    cy = (weight * grid[None, :, None]).sum((1, 2)) / mass
    spread_x = (weight * (grid[None, None, :] - cx[:, None, None]) ** 2).sum((1, 2)) / mass
    spread_y = (weight * (grid[None, :, None] - cy[:, None, None]) ** 2).sum((1, 2)) / mass
    upright = spread_y > spread_x
    length = np.sqrt(12 * np.where(upright, spread_y, spread_x))
    return np.stack([upright, length, cx, cy], 1).astype(np.float32)


def readings(images, factors):
    """Per image (judge.readings serves these): legible (one bar the renderer draws: its fit
    reproduces the image within MAX_BAD_PIXELS pixels off by more than BAD_PIXEL), read (the bits
    of the fit and of the bar's mean colour), composed (legible and read as asked), precise (here
    the same as composed: legibility is already the renderer's tolerance)."""
    images = np.asarray(images, dtype=np.float32)
    fit = fit_bars(images)
    cover = coverage(*fit.T)                                                # (N, H, W)
    inside = cover > 0.5
    color = (images * inside[..., None]).sum((1, 2)) / inside.sum((1, 2)).clip(1)[:, None]
    drawn = cover[..., None] * color[:, None, None]
    bad = (np.abs(drawn - images).max(-1) > BAD_PIXEL).sum((1, 2))
    read = np.stack([fit[:, 0].astype(np.int64),
                     np.abs(color[:, None] - CLASS_COLORS[None]).sum(-1).argmin(1),
                     (fit[:, 1] < LENGTHS[[0, 1], [0, 1]].mean()).astype(np.int64)], 1)
    legible = (bad <= MAX_BAD_PIXELS) & ((images.max(-1) > 0.2).sum((1, 2)) >= MIN_AREA)
    composed = legible & (read == np.asarray(factors)).all(1)
    return {"composed": composed, "precise": composed, "legible": legible, "read": read}
