"""Shapes2D: the toy world every generator learns from, and the tokenizers they share.

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
"""
import hashlib
import os

import numpy as np
import torch
import torch.nn as nn

IMAGE_SIZE = 32
FACTORS = ("shape", "color", "size")
COMPOSITIONS = tuple(f"{i:03b}" for i in range(8))  # "000" ... "111"
SEEN = ("000", "001", "010", "100")
LEVEL1 = ("011", "101", "110")
LEVEL2 = ("111",)
SPLITS = {"seen": SEEN, "level1": LEVEL1, "level2": LEVEL2}
COND_MODES = ("continuous", "discrete", "dropout", "discrete-dropout", "text", "text-partial")
TEXT_MODES = ("text", "text-partial")            # the condition is a caption, read by TextEncoder
DATA_KINDS = ("fixed", "fresh")                 # training images rendered once, or every step

CLASS_COLORS = np.array([[0.85, 0.15, 0.15], [0.15, 0.30, 0.85]])  # red, blue
COLOR_JITTER = 0.08                                              # per channel, uniform
SIZE_RANGES = np.array([[8.0, 9.5], [4.5, 5.5]])                 # big, small (pixels)
TRIANGLE_SCALE = 1.3       # triangle circumradius / s, so both shapes look equally big
SQRT3 = 3 ** 0.5
POSITION_JITTER = 3.0      # centre drawn uniformly within +-3 px of the image centre
CACHE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache")


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
    """A generator's training batches, (tokens, latents (B, 7)), from seen compositions only.

    fixed: n_per_code images per seen composition, rendered once and drawn with replacement
           (by 20,000 steps of batch 64 each image has been seen about 64 times);
    fresh: every batch rendered anew from newly drawn latents (about 1 ms a batch), so no
           image is ever seen twice. Either way, encode turns images into the model's tokens.
    Batches are on `device`, the generator's: fixed images are kept there and indexed there;
    fresh ones are rendered on the CPU (numpy) and moved.
    """

    def __init__(self, kind, n_per_code, encode, device="cpu"):
        if kind not in DATA_KINDS:
            raise ValueError(f"unknown training data {kind!r}; choose from {', '.join(DATA_KINDS)}")
        self.kind, self.encode, self.device = kind, encode, torch.device(device)
        if kind == "fixed":
            images, _, latents = training_set(n_per_code)
            self.tokens = encode(images).to(self.device)             # (N, 64, ...): moved once
            self.latents = torch.as_tensor(latents).to(self.device)  # (N, 7)

    def batch(self, size, generator):
        if self.kind == "fixed":
            index = torch.randint(len(self.tokens), (size,), generator=generator,
                                  device=self.device)
            return self.tokens[index], self.latents[index]
        seed = torch.randint(2 ** 62, (1,), generator=generator, device=self.device)
        rng = np.random.default_rng(int(seed))                        # the CPU renders: one wait
        bits = np.array([code_to_bits(code) for code in SEEN])[rng.integers(len(SEEN), size=size)]
        latents = sample_latents(bits, rng)
        tokens, latents = self.encode(render(latents)), torch.as_tensor(latents)
        return tokens.to(self.device), latents.to(self.device)


# -------------------------------------------------------------------------- conditioning
# The condition is a vector of 7 values in four groups; a group may be hidden.
COND_GROUPS = (("shape", 0, 1), ("color", 1, 4), ("size", 4, 5), ("position", 5, 7))
_COND_CENTRE = np.array([0.5, 0.5, 0.5, 0.5, 7.0, 16.0, 16.0], dtype=np.float32)
_COND_SCALE = np.array([0.5, 0.35, 0.35, 0.35, 2.5, 3.0, 3.0], dtype=np.float32)


def conditioning(latents, mode, drop_prob=0.1, generator=None, train=True):
    """The four conditioning modes of the contract as (values (B, 7), present (B, 4)).

    continuous:       the exact latents, scaled to about [-1, 1] (full information);
    discrete:         colour and size replaced by their class centres, position hidden:
                      only the three binary labels survive (quantized information);
    dropout:          continuous, and in training each factor is hidden with drop_prob;
    discrete-dropout: both. A hidden group is replaced by a learned null in the model.
    text, text-partial: a caption instead (see `captions`): (word ids (B, L), present (B, L)).
    """
    if mode not in COND_MODES:
        raise ValueError(f"unknown conditioning mode {mode!r}; choose from {', '.join(COND_MODES)}")
    if mode in TEXT_MODES:
        return captions(latents, mode == "text-partial" and train, drop_prob, generator)
    device = generator.device if generator is not None else torch.device("cpu")   # made there
    as_tensor = lambda array: torch.as_tensor(array, dtype=torch.float32).to(device)  # noqa: E731
    latents = as_tensor(latents)
    values = latents.clone()
    present = torch.ones(len(latents), len(COND_GROUPS), dtype=torch.bool, device=device)
    if mode.startswith("discrete"):
        color_bit = (latents[:, 3] > latents[:, 1]).long()                 # blue if B > R
        size_bit = (latents[:, 4] < SIZE_RANGES[:, 0].mean()).long()      # small below 6.25
        values[:, 1:4] = as_tensor(CLASS_COLORS)[color_bit]
        values[:, 4] = as_tensor(SIZE_RANGES.mean(1))[size_bit]
        present[:, 3] = False
    if mode.endswith("dropout") and train:
        dropped = torch.rand(len(latents), 3, generator=generator, device=device) < drop_prob
        present[:, :3] &= ~dropped
    values = (values - as_tensor(_COND_CENTRE)) / as_tensor(_COND_SCALE)
    return values, present


# ------------------------------------------------------------------------------ captions
# --cond text and text-partial: the condition is a caption ("a small blue triangle"), read by a
# small text encoder trained with the generator. A caption names the three classes and nothing
# else (no exact colour, size or position): it holds what `discrete` holds, in words.
VOCABULARY = ("<pad>", "a", "circle", "triangle", "shape", "red", "blue", "big", "small",
              "that", "is", "in")
WORDS = (("circle", "triangle"), ("red", "blue"), ("big", "small"))     # bit -> word, per factor
PHRASINGS = 3                  # word orders as English has them; training draws one per caption
CAPTION_LENGTH = 6             # the longest caption, "a blue triangle that is small"


def caption(shape, color, size, phrasing=0):
    """One caption from the three factors' words; a factor given as None is left out (its
    noun becomes "shape"). phrasing 0 is what evaluations ask: "a small blue triangle"."""
    noun = shape or "shape"
    if phrasing == 0:
        words = ["a", size, color, noun]                          # a small blue triangle
    elif phrasing == 1:
        words = ["a", color, noun] + (["that", "is", size] if size else [])
    elif phrasing == 2:
        words = ["a", size, noun] + (["in", color] if color else [])  # a small triangle in blue
    else:
        raise ValueError(f"unknown phrasing {phrasing}; there are {PHRASINGS}")
    return " ".join(word for word in words if word)


def caption_table():
    """Every caption's word ids, (2, 2, 2, 2, 2, 2, PHRASINGS, L): indexed by the three bits, which
    of the three words are kept, and the phrasing (a lookup, so captions are made on any device)."""
    table = torch.zeros(2, 2, 2, 2, 2, 2, PHRASINGS, CAPTION_LENGTH, dtype=torch.long)
    for index in np.ndindex(*table.shape[:-1]):
        bits, kept, phrasing = index[:3], index[3:6], index[6]
        words = [WORDS[f][b] if k else None for f, (b, k) in enumerate(zip(bits, kept))]
        text = caption(*words, phrasing=phrasing).split()
        table[index][:len(text)] = torch.tensor([VOCABULARY.index(word) for word in text])
    return table


CAPTIONS = caption_table()


def captions(latents, partial=False, drop_prob=0.1, generator=None):
    """Captions of the latents' compositions as (word ids (B, L), present (B, L), False at padding).
    Training (generator given) draws a phrasing per caption; partial: each factor's word is left
    out with drop_prob (text-partial, training only). Evaluations ask phrasing 0, in full."""
    device = generator.device if generator is not None else torch.device("cpu")
    latents = torch.as_tensor(latents, dtype=torch.float32).to(device)
    bits = torch.stack([latents[:, 0].round(), latents[:, 3] > latents[:, 1],   # blue if B > R
                        latents[:, 4] < SIZE_RANGES[:, 0].mean()], 1).long()   # small below 6.25
    kept = torch.ones_like(bits)
    if partial:
        kept = (torch.rand(bits.shape, generator=generator, device=device) >= drop_prob).long()
    phrasing = torch.zeros(len(bits), dtype=torch.long, device=device)
    if generator is not None:
        phrasing = torch.randint(PHRASINGS, (len(bits),), generator=generator, device=device)
    ids = CAPTIONS.to(device)[(*bits.T, *kept.T, phrasing)]                  # (B, L)
    return ids, ids != 0


class TextEncoder(nn.Module):
    """A caption's reader, trained from scratch with the generator: word and position
    embeddings, one pre-norm self-attention block over the words, and their mean: (B, D)."""

    def __init__(self, width, heads=4):
        super().__init__()
        self.words = nn.Embedding(len(VOCABULARY), width)
        self.positions = nn.Parameter(0.02 * torch.randn(CAPTION_LENGTH, width))
        self.norm1 = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, ids, present):                              # ids, present (B, L)
        h = self.words(ids) + self.positions[:ids.shape[1]]       # (B, L, D)
        x = self.norm1(h)
        h = h + self.attention(x, x, x, key_padding_mask=~present, need_weights=False)[0]
        h = h + self.mlp(self.norm2(h))
        weight = present[..., None].float()                       # padding does not count
        return (h * weight).sum(1) / weight.sum(1)                # (B, D)


# ---------------------------------------------------------------------------- tokenizers
# Every tokenizer is fitted on seen compositions only: it belongs to the generators' world.
def patchify(images, patch):
    """(N, H, W, 3) -> (N, T, patch*patch*3), row-major patches; numpy or torch."""
    n, h, w, c = images.shape
    x = images.reshape(n, h // patch, patch, w // patch, patch, c)
    x = x.transpose(2, 3) if torch.is_tensor(x) else x.transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n, (h // patch) * (w // patch), patch * patch * c)


def unpatchify(tokens, patch):
    """(N, T, patch*patch*3) -> (N, H, W, 3), the inverse of patchify."""
    n, t, _ = tokens.shape
    side = int(round(t ** 0.5))
    x = tokens.reshape(n, side, side, patch, patch, 3)
    x = x.transpose(2, 3) if torch.is_tensor(x) else x.transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n, side * patch, side * patch, 3)


def _kmeans(points, k, seed, iterations=25):
    """Plain Lloyd k-means in torch, deterministic in seed: returns (k, D) centres."""
    points = torch.as_tensor(points, dtype=torch.float32)
    rng = np.random.default_rng(seed)
    centres = points[torch.as_tensor(rng.choice(len(points), k, replace=False))].clone()
    for _ in range(iterations):
        nearest = torch.cdist(points, centres).argmin(1)
        sums = torch.zeros_like(centres).index_add_(0, nearest, points)
        counts = torch.bincount(nearest, minlength=k).float()[:, None]
        centres = torch.where(counts > 0, sums / counts.clamp(min=1), centres)
    return centres


def _alpha(images):
    """Per-pixel coverage of the single object: projection on the brightest pixel's colour."""
    flat = images.reshape(len(images), -1, 3)
    color = flat[np.arange(len(flat)), flat.max(2).argmax(1)]               # (N, 3)
    alpha = (flat * color[:, None]).sum(2) / (color ** 2).sum(1, keepdims=True).clip(1e-6)
    return alpha.clip(0, 1).reshape(images.shape[:3])


class Codebook:
    """A discrete tokenizer: each patch is one id = (coverage mask, colour) pair.

    A plain k-means codebook over RGB patches fitted on seen images cannot draw a blue
    triangle edge, because none occurs in training. Here a patch is modelled as
    mask (patch x patch coverage) times colour, each quantized on its own:
    `n_masks` k-means masks (1024) and a palette of `n_colors` k-means colours (2: one red, one
    blue), so id = mask_index * n_colors + color_index, a vocabulary of n_masks * n_colors.
    Encoding picks the pair with the least squared error.
    """

    def __init__(self, patch=4, n_masks=1024, n_colors=2, seed=0):
        self.patch, self.n_masks, self.n_colors, self.seed = patch, n_masks, n_colors, seed
        self.vocab_size = n_masks * n_colors
        images = training_set(500, seed=1000 + seed)[0]
        pixels = images.reshape(-1, 3)
        solid = pixels[pixels.max(1) > 0.6]                               # fully covered
        self.palette = _kmeans(solid, n_colors, seed)                     # (C, 3)
        masks = patchify(_alpha(images)[..., None], patch).reshape(-1, patch * patch)
        edges = masks[(masks.max(1) > 0.02) & (masks.min(1) < 0.98)]       # partly covered
        fitted = _kmeans(edges, n_masks - 2, seed)
        empty, full = torch.zeros(1, patch * patch), torch.ones(1, patch * patch)
        self.masks = torch.cat([empty, full, fitted])                       # (M, P)

    def encode(self, images, chunk=8192):
        """(N, H, W, 3) -> ids (N, T) int64."""
        patches = torch.as_tensor(patchify(np.asarray(images), self.patch)).float()
        n, t, _ = patches.shape
        pixels = patches.reshape(n * t, self.patch * self.patch, 3)       # (Np, P, 3)
        mask_sq = (self.masks ** 2).sum(1)                                  # (M,)
        color_sq = (self.palette ** 2).sum(1)                               # (C,)
        ids = []
        for x in pixels.split(chunk):
            cross = torch.einsum("npc,mp->ncm", x @ self.palette.T, self.masks)   # (Np, C, M)
            # ||x - m c||^2 = ||x||^2 - 2 sum_p m_p <x_p, c> + ||c||^2 ||m||^2
            error = color_sq[None, :, None] * mask_sq[None, None, :] - 2 * cross
            best = error.flatten(1).argmin(1)                               # over (C, M)
            color, mask = best // self.n_masks, best % self.n_masks
            ids.append(mask * self.n_colors + color)
        return torch.cat(ids).reshape(n, t)

    def vectors(self, ids):
        """ids (N, T) -> the codes' patch vectors (N, T, patch*patch*3), values in [0, 1]."""
        ids = torch.as_tensor(ids)
        mask = self.masks[ids // self.n_colors]                              # (N, T, P)
        color = self.palette[ids % self.n_colors]                            # (N, T, 3)
        return (mask[..., None] * color[..., None, :]).flatten(2)

    def decode(self, ids):
        return unpatchify(self.vectors(ids), self.patch).numpy()


class PCATokenizer:
    """A continuous compressed tokenizer: each patch projected on its top principal axes."""

    def __init__(self, patch=4, dims=16, seed=0):
        self.patch, self.dims, self.seed = patch, dims, seed
        patches = torch.as_tensor(patchify(training_set(500, seed=1000 + seed)[0], patch))
        patches = patches.reshape(-1, patches.shape[-1]).double()
        self.mean = patches.mean(0)
        _, singular, axes = torch.linalg.svd(patches - self.mean, full_matrices=False)
        self.axes = axes[:dims].T                                            # (D, dims)
        self.scale = float(singular[0] / len(patches) ** 0.5)                # top std -> 1

    def encode(self, images):
        """(N, H, W, 3) -> (N, T, dims) float32, about unit scale."""
        patches = torch.as_tensor(patchify(np.asarray(images), self.patch)).double()
        return ((patches - self.mean) @ self.axes / self.scale).float()

    def decode(self, tokens):
        patches = torch.as_tensor(tokens).double() * self.scale @ self.axes.T + self.mean
        return unpatchify(patches.float(), self.patch).numpy()


class ContinuousTokenizer:
    """Images <-> continuous tokens (B, T, C) in about [-1, 1], T = 64 patches of 4x4: the raw
    pixels (C = 48), the codebook's vectors (the very codes MaskGIT predicts as ids, C = 48), or
    PCA (C = 16). What givt.py, mar.py, dit.py and ar.py's mixture head model."""

    def __init__(self, name):
        if name not in ("pixels", "codebook", "pca"):
            raise ValueError(f"unknown tokenizer {name!r}; choose from pixels, codebook, pca")
        self.name = name
        self.fitted = None if name == "pixels" else load_tokenizer(name)
        self.dim = 16 if name == "pca" else 4 * 4 * 3

    def encode(self, images):
        if self.name == "pixels":
            return torch.as_tensor(patchify(images, 4)) * 2 - 1
        if self.name == "codebook":
            return self.fitted.vectors(self.fitted.encode(images)) * 2 - 1
        return self.fitted.encode(images)

    def decode(self, tokens):
        tokens = tokens.float().cpu()
        if self.name == "pca":
            return self.fitted.decode(tokens)
        return unpatchify((tokens + 1) / 2, 4).numpy()                      # (B, H, W, 3)


def load_tokenizer(name, **settings):
    """'codebook' or 'pca', built once and cached under .cache/ (deterministic)."""
    kinds = {"codebook": Codebook, "pca": PCATokenizer}
    if name not in kinds:
        raise ValueError(f"unknown tokenizer {name!r}; choose from {', '.join(kinds)}")
    path = cache_path(f"tokenizer-{name}",
                      sorted(settings.items()) + [kinds[name].__init__.__defaults__])
    if os.path.exists(path):
        tokenizer = kinds[name].__new__(kinds[name])
        tokenizer.__dict__.update(torch.load(path, weights_only=True))
        return tokenizer
    tokenizer = kinds[name](**settings)
    save_atomic(tokenizer.__dict__, path, shared=True)
    return tokenizer


def save_atomic(state, path, shared=False):
    """torch.save to a temporary file, then rename: an interruption never leaves half a file.
    shared: runs started together may write this file at once (the cache), so each its own
    temporary."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp" if shared else path + ".tmp"
    torch.save(state, temporary)
    os.replace(temporary, path)


def cache_path(kind, settings=()):
    """A file under .cache/ whose name changes when the world's definition changes."""
    world = (IMAGE_SIZE, CLASS_COLORS.tolist(), COLOR_JITTER, SIZE_RANGES.tolist(),
             TRIANGLE_SCALE, POSITION_JITTER)
    key = hashlib.sha1(repr((kind, settings, world)).encode()).hexdigest()[:12]
    return os.path.join(CACHE_DIR, f"{kind}-{key}.pt")


# ------------------------------------------------------------ Objects: how many, and where
# The second world (objects.py): N small discs of one colour on the same 32x32 canvas, each at
# its own cell of a 5x5 grid of cells 6 px apart, jittered by up to 0.5 px, so that two never
# touch. The latents are the positions, (x, y) in pixels, one row an object.
GRID = np.array([4.0, 10.0, 16.0, 22.0, 28.0])                  # cell centres along each axis
CELLS = np.stack(np.meshgrid(GRID, GRID, indexing="xy"), -1).reshape(-1, 2)   # (25, 2), row-major
DISC_RADIUS = 1.8          # with the 0.5 px soft edge, discs 5 px apart stay 0.4 px apart
OBJECT_COLOR = CLASS_COLORS[0]


def sample_positions(counts, rng, jitter=0.5):
    """For each n of counts: n distinct cells, jittered, as an (n, 2) float32 array of (x, y)."""
    found = []
    for n in counts:
        if not 0 <= n <= len(CELLS):
            raise ValueError(f"cannot place {n} objects: the grid holds 0 to {len(CELLS)}")
        chosen = CELLS[rng.choice(len(CELLS), n, replace=False)]
        found.append((chosen + rng.uniform(-jitter, jitter, chosen.shape)).astype(np.float32))
    return found


def render_objects(positions):
    """Images (N, H, W, 3) float32: a disc at each (x, y)
    of each list entry, anti-aliased as render's."""
    images = np.zeros((len(positions), IMAGE_SIZE, IMAGE_SIZE, 3), np.float32)
    for image, points in zip(images, positions):
        if len(points):
            points = np.asarray(points, dtype=np.float32)
            discs, _ = outline_distances(np.full(len(points), DISC_RADIUS, np.float32),
                                         points[:, 0], points[:, 1])
            image[:] = coverage_of(discs).max(0)[..., None] * OBJECT_COLOR
    return images
