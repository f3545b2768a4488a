"""Shapes2D: the toy world every generator learns from, and the condition it is told.

One shape on a black background, 32x32 RGB. Three binary factors, always in this order:

    bit | factor | 0      | 1
    1st | shape  | circle | triangle
    2nd | color  | red    | blue
    3rd | size   | big    | small

A composition is written as its bits: "110" is a blue big triangle. Generators train on
the SEEN compositions only; LEVEL1 compositions are one flip away from a seen one, LEVEL2
two flips away from every seen one.

Each image is rendered from continuous latents (the exact colour, the exact size, the
exact position), so a row of `latents` is the full information about its image:

    latents[:, 0]   shape bit (0 circle, 1 triangle)
    latents[:, 1:4] RGB colour, drawn around the class colour
    latents[:, 4]   size s in pixels (circle radius; a triangle's circumradius is 1.3 s)
    latents[:, 5:7] centre (x, y) in pixels, jittered around the image centre

A world is a module with the names this file defines for Shapes2D, so that every generator, the
probe and the judge serve any world unchanged (`--world NAME`, runs.WORLDS; shapes3d.py is the
study's many-valued world, clips.py its driving clips as a 2x2 mosaic of four frames, bars.py
the course's world a student writes, assignment A11):

    NAME, IMAGE_SIZE, FACTORS        its name, the image side (32), the factors in code order
    VALUES                           the values of each factor, by name; a code holds one value
                                     index per factor ("110": values 1, 1, 0)
    COMPOSITIONS, SPLITS             every code; the splits seen / level1 / level2 (GROUPS may
                                     cut them finer for tables); generators learn from SEEN only
    code_to_bits, bits_to_code       code <-> value indices; describe(code) names it in words
    sample_latents(bits, rng)        the continuous latents (N, L) of the asked value indices
    render(latents)                  images (N, 32, 32, 3) float32 in [0, 1]
    make_dataset, training_set       real images, their value indices and latents
    requests(n)                      the value indices (N, F) an evaluation asks for
    COND_MODES, COND_GROUPS          the --cond modes that apply; the condition vector's groups
    class_bits, conditioning         the value indices latents render; the condition of a mode
    RUN_DEFAULTS, TOKENIZERS         flag defaults and tokenizer settings it sizes otherwise
    PROBE_PER_CODE, HELD_OUT_PER_CODE  real images of each code the readers train and check on
    DEFINITION                       what the caches are keyed by (change it, refit them)
    readings(images, factors)        (a further world) its own reading of an image's factors: one
                                     legible object, which values, rendered precisely; judge.py
                                     holds Shapes2D's
    narrowed(N)                      (optional) the world learning from N of its seen codes only,
                                     --seen-count N (shapes3d.py's diversity sweep)
    frames_of, cra                   (optional, a clip world) the frames of each image; the
                                     study's retrieval reading (CRA), recorded by judge.evaluate
"""
import hashlib
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

import captions

NAME = "shapes2d"
IMAGE_SIZE = 32
FACTORS = ("shape", "color", "size")
VALUES = (("circle", "triangle"), ("red", "blue"), ("big", "small"))
COMPOSITIONS = tuple(f"{i:03b}" for i in range(8))  # "000" ... "111"
SEEN = ("000", "001", "010", "100")
LEVEL1 = ("011", "101", "110")
LEVEL2 = ("111",)
SPLITS = {"seen": SEEN, "level1": LEVEL1, "level2": LEVEL2}
COND_MODES = ("continuous", "discrete", "dropout", "discrete-dropout", "text", "text-partial")
TEXT_MODES = ("text", "text-partial")            # the condition is a caption: captions.py
DATA_KINDS = ("fixed", "fresh")                 # training images rendered once, or every step

CLASS_COLORS = np.array([[0.85, 0.15, 0.15], [0.15, 0.30, 0.85]])  # red, blue
COLOR_JITTER = 0.08                                              # per channel, uniform
SIZE_RANGES = np.array([[8.0, 9.5], [4.5, 5.5]])                 # big, small (pixels)
TRIANGLE_SCALE = 1.3       # triangle circumradius / s, so both shapes look equally big
SQRT3 = 3 ** 0.5
POSITION_JITTER = 3.0      # centre drawn uniformly within +-3 px of the image centre
CACHE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache")
RUN_DEFAULTS = {}           # flags this world sizes otherwise than the generators' DEFAULTS
TOKENIZERS = {}             # settings of tokenizers.py's fitted tokenizers, beyond their defaults
PROBE_PER_CODE = 1000       # real images of each composition the probe and the reader train on
HELD_OUT_PER_CODE = 250     # real images of each composition that check them
DEFINITION = (IMAGE_SIZE, CLASS_COLORS.tolist(), COLOR_JITTER, SIZE_RANGES.tolist(),
              TRIANGLE_SCALE, POSITION_JITTER)              # what the caches are keyed by


def code_to_bits(code):
    """'101' -> (1, 0, 1); refuses anything that is not one of the eight codes."""
    if code not in COMPOSITIONS:
        raise ValueError(f"unknown composition code {code!r}; "
                         f"choose from {', '.join(COMPOSITIONS)}")
    return tuple(int(c) for c in code)


def bits_to_code(bits):
    return "".join(str(int(b)) for b in bits)


def split_of(code):
    code_to_bits(code)
    return next(name for name, codes in SPLITS.items() if code in codes)


def describe(code):
    """'110' -> 'blue big triangle'."""
    shape, color, size = code_to_bits(code)
    return f"{VALUES[1][color]} {VALUES[2][size]} {VALUES[0][shape]}"


def requests(n_per_code):
    """The factor bits an evaluation asks for, n_per_code of each composition in order: (N, 3)."""
    return np.repeat([code_to_bits(c) for c in COMPOSITIONS], n_per_code, 0)


# ----------------------------------------------------------------------------- rendering
def sample_latents(bits, rng):
    """Continuous latents for the requested factor bits (N, 3), from the class ranges."""
    bits = np.asarray(bits, dtype=np.int64).reshape(-1, 3)
    n = len(bits)
    color = CLASS_COLORS[bits[:, 1]] + rng.uniform(-COLOR_JITTER, COLOR_JITTER, (n, 3))
    low, high = SIZE_RANGES[bits[:, 2]].T
    size = low + (high - low) * rng.uniform(0, 1, n)
    centre = IMAGE_SIZE / 2 + rng.uniform(-POSITION_JITTER, POSITION_JITTER, (n, 2))
    return np.concatenate([bits[:, :1], color, size[:, None], centre], 1).astype(np.float32)


def outline_distances(size, cx, cy):
    """Signed distances (pixels, negative inside) from every pixel centre to the outline of
    the circle and of the triangle with these latents: two (N, H, W) arrays. numpy or torch
    in, the same out (the judge fits shapes with these in torch)."""
    xp = torch if torch.is_tensor(size) else np
    grid = xp.arange(IMAGE_SIZE) + 0.5
    grid = grid.to(size) if xp is torch else grid.astype(np.float32)
    x = grid[None, None, :] - cx[:, None, None]                             # (N, H, W)
    y = grid[None, :, None] - cy[:, None, None]
    size = size[:, None, None]
    circle = xp.sqrt(x ** 2 + y ** 2) - size
    # Upward triangle centred on its bounding box: apex at -0.75 R, base at +0.75 R.
    radius = TRIANGLE_SCALE * size
    base = y - 0.75 * radius
    left = (-SQRT3 * x - y) / 2 - 0.75 * radius / 2
    right = (SQRT3 * x - y) / 2 - 0.75 * radius / 2
    triangle = xp.maximum(base, xp.maximum(left, right))         # max of edge distances
    return circle, triangle


def coverage_of(distance):
    """Anti-aliased coverage clip(0.5 - d, 0, 1): a one-pixel soft edge."""
    return np.clip(0.5 - distance, 0.0, 1.0)


def render(latents):
    """Anti-aliased images (N, H, W, 3) float32 in [0, 1] from latents (N, 7).

    Coverage of a pixel = clip(0.5 - d, 0, 1), d the signed distance (pixels) from the
    pixel centre to the shape's outline, negative inside: a one-pixel soft edge.
    """
    latents = np.asarray(latents, dtype=np.float32)
    circle, triangle = outline_distances(latents[:, 4], latents[:, 5], latents[:, 6])
    distance = np.where(latents[:, 0, None, None] > 0.5, triangle, circle)
    return (coverage_of(distance)[..., None] * latents[:, None, None, 1:4]).astype(np.float32)


def make_dataset(codes, n_per_code, seed):
    """images (N, H, W, 3) float32, bits (N, 3) int64, latents (N, 7): deterministic in seed."""
    rng = np.random.default_rng(seed)
    bits = np.repeat(np.array([code_to_bits(c) for c in codes]), n_per_code, axis=0)
    order = rng.permutation(len(bits))
    bits = bits[order]
    latents = sample_latents(bits, rng)
    return render(latents), bits, latents


def training_set(n_per_code=5000, seed=0):
    """What a generator (and a tokenizer's fit) may learn from: seen compositions only."""
    return make_dataset(SEEN, n_per_code, seed)


class TrainingData:
    """A generator's training batches, (tokens, condition values, present), from seen compositions
    only; the condition is data.conditioning's (mode cond, each factor hidden with cond_drop).

    fixed: n_per_code images per seen composition, rendered once and drawn with replacement
           (by 20,000 steps of batch 64 each image has been seen about 64 times);
    fresh: every batch rendered anew from newly drawn latents (about 1 ms a batch), so no
           image is ever seen twice. Either way, encode turns images into the model's tokens.
    Batches are on `device`, the generator's: fixed images are encoded and kept there; fresh ones
    are rendered on the CPU (numpy: one wait a step, for the seed) and encoded there. `world` is
    the module of the world (this one by default; runs.world(config) names it).
    """

    def __init__(self, kind, n_per_code, cond, cond_drop, encode, device="cpu", world=None):
        if kind not in DATA_KINDS:
            raise ValueError(f"unknown training data {kind!r}; choose from {', '.join(DATA_KINDS)}")
        self.kind, self.cond, self.cond_drop = kind, cond, cond_drop
        self.encode, self.device = encode, torch.device(device)
        self.world = world or sys.modules[__name__]
        if kind == "fixed":
            images, _, latents = self.world.training_set(n_per_code)
            self.tokens = encode(torch.as_tensor(images, device=self.device))      # (N, 64, ...)
            self.latents = torch.as_tensor(latents, device=self.device)             # (N, 7)

    def batch(self, size, rng):
        """tokens (B, 64, ...) and their condition, drawn by rng (a torch.Generator of the
        device): which images, then what the condition hides."""
        if self.kind == "fixed":
            index = torch.randint(len(self.tokens), (size,), generator=rng, device=self.device)
            tokens, latents = self.tokens[index], self.latents[index]
        else:
            seed = torch.randint(2 ** 62, (1,), generator=rng, device=self.device)
            draw = np.random.default_rng(int(seed))                  # the CPU renders: one wait
            world = self.world
            bits = np.array([world.code_to_bits(code) for code in world.SEEN])[
                draw.integers(len(world.SEEN), size=size)]
            latents = world.sample_latents(bits, draw)
            images, latents = to_device([world.render(latents), latents], self.device)
            tokens = self.encode(images)
        return (tokens, *self.world.conditioning(latents, self.cond, self.cond_drop, rng))


# -------------------------------------------------------------------------- conditioning
# The condition is a vector of 7 values in four groups; a group may be hidden.
COND_GROUPS = (("shape", 0, 1), ("color", 1, 4), ("size", 4, 5), ("position", 5, 7))
COND_CENTRE = np.array([0.5, 0.5, 0.5, 0.5, 7.0, 16.0, 16.0], dtype=np.float32)
COND_SCALE = np.array([0.5, 0.35, 0.35, 0.35, 2.5, 3.0, 3.0], dtype=np.float32)
_TABLES = {}            # the condition's constant tables, made on each device once


def tables(device):
    """CLASS_COLORS, the class sizes, COND_CENTRE and COND_SCALE as float32 tensors on device."""
    if device not in _TABLES:
        _TABLES[device] = [torch.as_tensor(array, dtype=torch.float32).to(device) for array in
                           (CLASS_COLORS, SIZE_RANGES.mean(1), COND_CENTRE, COND_SCALE)]
    return _TABLES[device]


def class_bits(latents):
    """The three factor bits (B, 3) int64 that latents (B, 7) render: shape, blue if B > R, small
    below 6.25 px."""
    return torch.stack([latents[:, 0].round(), latents[:, 3] > latents[:, 1],
                        latents[:, 4] < SIZE_RANGES[:, 0].mean()], 1).long()


def conditioning(latents, mode, drop_prob=0.1, rng=None, train=True):
    """The four conditioning modes of the contract as (values (B, 7), present (B, 4)), made on
    rng's device (the CPU without one).

    continuous:       the exact latents, scaled to about [-1, 1] (full information);
    discrete:         colour and size replaced by their class centres, position hidden:
                      only the three binary labels survive (quantized information);
    dropout:          continuous, and in training each factor is hidden with drop_prob;
    discrete-dropout: both. A hidden group is replaced by a learned null in the model.
    text, text-partial: a caption instead (captions.py): (word ids (B, L), present (B, L)).
    """
    if mode not in COND_MODES:
        raise ValueError(f"unknown conditioning mode {mode!r}; choose from {', '.join(COND_MODES)}")
    device = rng.device if rng is not None else torch.device("cpu")
    latents = torch.as_tensor(latents, dtype=torch.float32).to(device)
    if mode in TEXT_MODES:
        return captions.captions(class_bits(latents), mode == "text-partial" and train,
                                 drop_prob, rng)
    colors, sizes, centre, scale = tables(device)
    values = latents.clone()
    present = torch.ones(len(latents), len(COND_GROUPS), dtype=torch.bool, device=device)
    if mode.startswith("discrete"):
        bits = class_bits(latents)
        values[:, 1:4] = colors[bits[:, 1]]
        values[:, 4] = sizes[bits[:, 2]]
        present[:, 3] = False
    if mode.endswith("dropout") and train:
        dropped = torch.rand(len(latents), 3, generator=rng, device=device) < drop_prob
        present[:, :3] &= ~dropped
    values = (values - centre) / scale
    return values, present


def components(pixels):
    """8-connected components of the True pixels of (N, H, W) bool: labels (N, H, W), 0 = none."""
    pixels = torch.as_tensor(pixels)
    inside = pixels.reshape(len(pixels), -1)
    labels = torch.arange(1, pixels[0].numel() + 1).reshape(pixels[0].shape) * pixels
    while True:     # every pixel takes the largest label around it, then the label of the pixel
        grown = F.max_pool2d(labels[:, None].float(), 3, 1, 1)[:, 0].long() * pixels
        flat = grown.reshape(len(pixels), -1)                  # its label names (a jump)
        grown = torch.maximum(flat, torch.gather(flat, 1, (flat - 1).clamp(min=0)) * inside)
        grown = grown.reshape(pixels.shape)
        if torch.equal(grown, labels):
            return grown.numpy()
        labels = grown


def to_device(arrays, device):
    """Host arrays (numpy or torch) as float32 tensors on device, in one copy: a step made on the
    host crosses once; on a GPU from pinned memory, so that the host does not wait for it."""
    parts, device = [torch.as_tensor(a, dtype=torch.float32) for a in arrays], torch.device(device)
    flat = torch.cat([part.reshape(-1) for part in parts])
    if device.type == "cuda":
        flat = flat.pin_memory()
    flat = flat.to(device, non_blocking=device.type == "cuda")
    return [piece.view(part.shape) for piece, part in
            zip(flat.split([part.numel() for part in parts]), parts)]


def save_to_cache(state, path):
    """torch.save to a temporary file of this process, then rename: runs started together may
    write the same cache file at once, and an interruption never leaves half a file."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    torch.save(state, temporary)
    os.replace(temporary, path)


def cache_path(kind, settings=(), world=None):
    """A file under .cache/ whose name changes when the world's definition changes; a world other
    than Shapes2D adds its name."""
    world = world or sys.modules[__name__]
    defined = world.definition() if hasattr(world, "definition") else world.DEFINITION
    definition = defined if world.NAME == NAME else (world.NAME, defined)
    key = hashlib.sha1(repr((kind, settings, definition)).encode()).hexdigest()[:12]
    return os.path.join(CACHE_DIR, f"{kind}-{key}.pt")
