"""The tokenizers: how an image becomes the 64 tokens a generator models, and back.

Every image is cut into 8x8 patches of 4x4 pixels. MaskGIT (and ar.py's categorical head) reads
each patch as one id of a discrete codebook (Codebook); GIVT, MAR, DiT and ar.py's mixture head
read it as a continuous vector (ContinuousTokenizer): the raw pixels, the codebook's vectors (the
very codes MaskGIT predicts, as vectors), or PCA. Every tokenizer is fitted on seen compositions
only, and encodes on the device of the images it is given.
"""
import os

import numpy as np
import torch

import data


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


def _kmeans(points, k, seed, iterations=25, spread=False):
    """Plain Lloyd k-means in torch, deterministic in seed: returns (k, D) centres. It starts from
    k random points, or (spread) from one random point and then each time the point farthest
    from the centres so far, so that no small, distant cluster (a rare hue) is left out."""
    points = torch.as_tensor(points, dtype=torch.float32)
    rng = np.random.default_rng(seed)
    centres = points[torch.as_tensor(rng.choice(len(points), k, replace=False))].clone()
    for j in range(1, k if spread else 0):
        centres[j] = points[torch.cdist(points, centres[:j]).amin(1).argmax()]
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
    Encoding picks the pair with the least squared error. A world of shaded solids fits the palette
    on each pixel's hue at full strength (normalize) and leaves the shading to the masks; it fits
    on `per_code` seen images of each composition (world.TOKENIZERS: its settings).
    """

    def __init__(self, patch=4, n_masks=1024, n_colors=2, seed=0, normalize=False, per_code=500,
                 world=data):
        self.patch, self.n_masks, self.n_colors, self.seed = patch, n_masks, n_colors, seed
        self.vocab_size = n_masks * n_colors
        images = world.training_set(per_code, seed=1000 + seed)[0]
        pixels = images.reshape(-1, 3)
        solid = pixels[pixels.max(1) > 0.6]                               # fully covered
        if normalize:
            solid = solid / solid.max(1, keepdims=True)                   # the hue at full value
        self.palette = _kmeans(solid, n_colors, seed, spread=normalize)  # (C, 3)
        masks = patchify(_alpha(images)[..., None], patch).reshape(-1, patch * patch)
        edges = masks[(masks.max(1) > 0.02) & (masks.min(1) < 0.98)]       # partly covered
        fitted = _kmeans(edges, n_masks - 2, seed)
        empty, full = torch.zeros(1, patch * patch), torch.ones(1, patch * patch)
        self.masks = torch.cat([empty, full, fitted])                       # (M, P)

    def encode(self, images, chunk=8192):
        """(N, H, W, 3) -> ids (N, T) int64."""
        patches = patchify(torch.as_tensor(images), self.patch).float()      # on the images' device
        n, t, _ = patches.shape
        masks, palette = self.masks.to(patches.device), self.palette.to(patches.device)
        pixels = patches.reshape(n * t, self.patch * self.patch, 3)       # (Np, P, 3)
        mask_sq = (masks ** 2).sum(1)                                       # (M,)
        color_sq = (palette ** 2).sum(1)                                    # (C,)
        ids = []
        for x in pixels.split(chunk):
            cross = torch.einsum("npc,mp->ncm", x @ palette.T, masks)       # (Np, C, M)
            # ||x - m c||^2 = ||x||^2 - 2 sum_p m_p <x_p, c> + ||c||^2 ||m||^2
            error = color_sq[None, :, None] * mask_sq[None, None, :] - 2 * cross
            best = error.flatten(1).argmin(1)                               # over (C, M)
            color, mask = best // self.n_masks, best % self.n_masks
            ids.append(mask * self.n_colors + color)
        return torch.cat(ids).reshape(n, t)

    def vectors(self, ids):
        """ids (N, T) -> the codes' patch vectors (N, T, patch*patch*3), values in [0, 1]."""
        ids = torch.as_tensor(ids)
        mask = self.masks.to(ids.device)[ids // self.n_colors]              # (N, T, P)
        color = self.palette.to(ids.device)[ids % self.n_colors]            # (N, T, 3)
        return (mask[..., None] * color[..., None, :]).flatten(2)

    def decode(self, ids):
        """ids (N, T) -> images (N, H, W, 3), numpy, on the host."""
        return unpatchify(self.vectors(torch.as_tensor(ids).cpu()), self.patch).numpy()


class PCATokenizer:
    """A continuous compressed tokenizer: each patch projected on its top principal axes."""

    def __init__(self, patch=4, dims=16, seed=0, per_code=500, world=data):
        self.patch, self.dims, self.seed = patch, dims, seed
        images = world.training_set(per_code, seed=1000 + seed)[0]
        patches = torch.as_tensor(patchify(images, patch))
        patches = patches.reshape(-1, patches.shape[-1]).double()
        self.mean = patches.mean(0)
        _, singular, axes = torch.linalg.svd(patches - self.mean, full_matrices=False)
        self.axes = axes[:dims].T                                            # (D, dims)
        self.scale = float(singular[0] / len(patches) ** 0.5)                # top std -> 1

    def encode(self, images):
        """(N, H, W, 3) -> (N, T, dims) float32, about unit scale."""
        patches = patchify(torch.as_tensor(images), self.patch).double()    # on the images' device
        mean, axes = self.mean.to(patches.device), self.axes.to(patches.device)
        return ((patches - mean) @ axes / self.scale).float()

    def decode(self, tokens):
        patches = torch.as_tensor(tokens).double() * self.scale @ self.axes.T + self.mean
        return unpatchify(patches.float(), self.patch).numpy()


class ContinuousTokenizer:
    """Images <-> continuous tokens (B, T, C) in about [-1, 1], T = 64 patches of 4x4: the raw
    pixels (C = 48), the codebook's vectors (the very codes MaskGIT predicts as ids, C = 48), or
    PCA (C = 16). What givt.py, mar.py, dit.py and ar.py's mixture head model."""

    def __init__(self, name, world=data):
        if name not in ("pixels", "codebook", "pca"):
            raise ValueError(f"unknown tokenizer {name!r}; choose from pixels, codebook, pca")
        self.name = name
        self.fitted = None if name == "pixels" else load_tokenizer(name, world)
        self.dim = 16 if name == "pca" else 4 * 4 * 3

    def encode(self, images):
        if self.name == "pixels":
            return patchify(torch.as_tensor(images), 4) * 2 - 1
        if self.name == "codebook":
            return self.fitted.vectors(self.fitted.encode(images)) * 2 - 1
        return self.fitted.encode(images)

    def decode(self, tokens):
        tokens = tokens.float().cpu()
        if self.name == "pca":
            return self.fitted.decode(tokens)
        return unpatchify((tokens + 1) / 2, 4).numpy()                      # (B, H, W, 3)


def load_tokenizer(name, world=data, **settings):
    """'codebook' or 'pca' of the world (its TOKENIZERS settings, then these), built once and cached
    under .cache/ (deterministic), keyed by the seen codes it is fitted on as well."""
    kinds = {"codebook": Codebook, "pca": PCATokenizer}
    if name not in kinds:
        raise ValueError(f"unknown tokenizer {name!r}; choose from {', '.join(kinds)}")
    settings = {**world.TOKENIZERS.get(name, {}), **settings}
    defaults = kinds[name].__init__.__defaults__[:-1]                  # all but the world
    path = data.cache_path(f"tokenizer-{name}", sorted(settings.items()) + [defaults, world.SEEN],
                           world)
    if os.path.exists(path):
        tokenizer = kinds[name].__new__(kinds[name])
        tokenizer.__dict__.update(torch.load(path, weights_only=True))
        return tokenizer
    tokenizer = kinds[name](**settings, world=world)
    data.save_to_cache(tokenizer.__dict__, path)
    return tokenizer
