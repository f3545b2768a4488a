"""The calibration suite that defines 'legible' for the judge (judge.py): kinds of drawings a
person accepts as the asked composition, and kinds a person rejects, all built from the
world's renderer. tests/test_calibration.py holds the judge to >= 98% of each accepted kind
composed and >= 97% of each rejected kind not legible; `python judge.py` prints the table.

The kinds a person accepts from GIVT-like drawings (ragged and blocky edges, dark and colour
specks, mottled fill) and the rejected colour patch were added after looking at where the
judge and a person disagreed on the gallery; GIVT seed 1's samples were labelled after that,
as a check the judge had not been shaped on (README, "The judge").
"""
import math

import numpy as np

import data


def broken_images(n, seed=0):
    """Images a judge must reject, built from real renderings: name -> (n, H, W, 3)."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, (n, 3))
    a, b = data.sample_latents(bits, rng), data.sample_latents(1 - bits, rng)
    image_a = data.render(a)
    half = np.arange(data.IMAGE_SIZE)[None, None, :, None] < a[:, 5, None, None, None]
    circle, triangle = a.copy(), a.copy()
    circle[:, 0], triangle[:, 0] = 0, 1
    notch = a.copy()
    notch[:, 0], notch[:, 1:4], notch[:, 4] = 0, 1.0, 0.5 * a[:, 4]          # white: coverage
    notch[:, 6] = a[:, 6] - a[:, 4]
    b_moved = b.copy()
    b_moved[:, 5:7] = a[:, 5:7] + rng.choice([-9, 9], (n, 2))
    b_moved[:, 1:4] = a[:, 1:4]
    grid = np.arange(data.IMAGE_SIZE) + 0.5
    d2 = (((grid[None, None, :] - a[:, 5, None, None]) / 1.8) ** 2
          + (grid[None, :, None] - a[:, 6, None, None]) ** 2)
    blob = np.exp(-d2 / (2 * a[:, 4, None, None] ** 2))[..., None] * a[:, None, None, 1:4]
    purple = a.copy()
    purple[:, 1:4] = (data.CLASS_COLORS[0] + data.CLASS_COLORS[1]) / 2
    giant = a.copy()
    giant[:, 4] = 13.0
    return {
        "fragment (half a shape)": np.where(half, image_a, 0),
        "two half shapes": np.where(half, data.render(circle), data.render(triangle)),
        "notched circle": data.render(circle) * (1 - data.render(notch).max(-1, keepdims=True)),
        "blob": blob.astype(np.float32),
        "noise": rng.uniform(0, 1, image_a.shape).astype(np.float32),
        "blank": np.zeros_like(image_a),
        "two shapes": np.maximum(image_a, data.render(b_moved)),
        "overlaid circle and triangle": np.maximum(data.render(circle), data.render(triangle)),
        "purple shape": data.render(purple),
        "giant shape": data.render(giant),
    }



def _polar_angle(latents):
    grid = np.arange(data.IMAGE_SIZE) + 0.5
    return np.arctan2(grid[None, :, None] - latents[:, 6, None, None],
                      grid[None, None, :] - latents[:, 5, None, None])


def _rounded_triangle(latents, radius):
    """Exact signed distance to a triangle with corners of this radius (the world's triangle,
    shrunk by the radius and grown back by it)."""
    grid = np.arange(data.IMAGE_SIZE) + 0.5
    px, py = grid[None, None, :], grid[None, :, None]
    big = data.TRIANGLE_SCALE * latents[:, 4]
    cx, cy = latents[:, 5, None, None], (latents[:, 6] + 0.25 * big)[:, None, None]   # centroid
    inner = (big - 2 * radius)[:, None, None]                       # inradius shrinks by the radius
    corners = [(cx + inner * math.sin(a), cy - inner * math.cos(a))
               for a in (0, 2 * math.pi / 3, 4 * math.pi / 3)]
    gaps, sides = [], []
    for (ax, ay), (bx, by) in zip(corners, corners[1:] + corners[:1]):
        t = (((px - ax) * (bx - ax) + (py - ay) * (by - ay))
             / ((bx - ax) ** 2 + (by - ay) ** 2)).clip(0, 1)
        gaps.append(np.hypot(px - ax - t * (bx - ax), py - ay - t * (by - ay)))   # to the segment
        sides.append((px - ax) * (by - ay) - (py - ay) * (bx - ax))          # > 0 outside this side
    inside = np.maximum.reduce(sides) < 0
    gap = np.minimum.reduce(gaps)                                          # to the nearest side
    return np.where(inside, -gap, gap) - radius[:, None, None]


def _blur(images, sigma):
    """Gaussian blur of each image with its own sigma (separable, 7 taps)."""
    size, taps = data.IMAGE_SIZE, np.arange(-3, 4)
    out = np.empty_like(images)
    for i, (image, s) in enumerate(zip(images, sigma)):
        kernel = np.exp(-taps ** 2 / (2 * s ** 2))
        kernel /= kernel.sum()
        x = np.pad(image, ((3, 3), (3, 3), (0, 0)))
        x = sum(k * x[j:j + size] for j, k in enumerate(kernel))
        out[i] = sum(k * x[:, j:j + size] for j, k in enumerate(kernel))
    return out


def calibration_images(n, seed=0):
    """The suite that defines 'legible': (accepted kinds, rejected kinds, bits asked (n, 3)),
    each kind name -> (n, H, W, 3) float images drawn for those bits."""
    rng = np.random.default_rng(seed)

    def uniform(low, high, *shape):
        return rng.uniform(low, high, shape or (n,))

    bits = rng.integers(0, 2, (n, 3))
    latents = data.sample_latents(bits, rng)
    circle, triangle = data.outline_distances(latents[:, 4], latents[:, 5], latents[:, 6])
    is_triangle = latents[:, 0, None, None] > 0.5
    own, other = np.where(is_triangle, triangle, circle), np.where(is_triangle, circle, triangle)

    def paint(distance, color):
        return (data.coverage_of(distance)[..., None] * color[:, None, None]).astype(np.float32)

    clean = paint(own, latents[:, 1:4])
    theta = _polar_angle(latents)                      # smooth wobble: harmonics 2-6, random phases
    wobble = sum(uniform(-1, 1)[:, None, None]
                 * np.cos(k * theta + uniform(0, 2 * math.pi)[:, None, None])
                 for k in range(2, 7))
    wobble *= (uniform(0.3, 1.0) / np.abs(wobble).reshape(n, -1).max(1))[:, None, None]
    beyond = latents.copy()
    low, high = data.SIZE_RANGES[bits[:, 2]].T
    stretch = uniform(1.0, 1.12)
    beyond[:, 4] = np.where(rng.random(n) < 0.5, low / stretch, high * stretch)
    salt = clean.copy()
    salt[rng.random((n,) + clean.shape[1:3]) < uniform(0.005, 0.02)[:, None, None]] = 1.0
    slight = uniform(0, 0.2)[:, None, None]
    inside = data.coverage_of(own) > 0.5

    def speck(fraction):
        return inside & (rng.random(inside.shape) < uniform(0.005, fraction)[:, None, None])

    ragged = own - uniform(0.5, 1.0)[:, None, None] * rng.uniform(-1, 1, own.shape)
    blocks = np.kron(rng.uniform(-1, 1, (n, data.IMAGE_SIZE // 2, data.IMAGE_SIZE // 2)),
                     np.ones((2, 2)))
    # up to 0.75 px on big shapes
    blocky = own - (uniform(0.04, 0.08) * latents[:, 4])[:, None, None] * blocks
    accepted = {
        "real": clean,
        "boundary jitter (up to 1 px)": paint(own - wobble, latents[:, 1:4]),
        "rounded corners (r up to 1.5 px)": paint(
            np.where(is_triangle, _rounded_triangle(latents, uniform(0.5, 1.5)), own),
            latents[:, 1:4]),
        "blur (sigma up to 0.8 px)": _blur(clean, uniform(0.3, 0.8)),
        "size up to 12% beyond its range": data.render(beyond),
        "colour off by up to 0.15": paint(
            own, data.CLASS_COLORS[bits[:, 1]] + uniform(-0.15, 0.15, n, 3)),
        "noise sigma 0.08": (np.clip(clean + rng.normal(0, 0.08, clean.shape), 0, 1)
                             .astype(np.float32)),
        "salt on up to 2% of pixels": salt,
        "morph up to 20% to the other shape": paint((1 - slight) * own + slight * other,
                                                    latents[:, 1:4]),
        "ragged edge (each pixel up to 1 px)": paint(ragged, latents[:, 1:4]),
        "blocky edge (2x2 blocks, up to 8% of the size)": paint(blocky, latents[:, 1:4]),
        "dark specks on up to 2% of the object": np.where(speck(0.02)[..., None], clean * 0.2,
                                                          clean),
        "mottled fill (2x2 blotches down to 55%)": clean * np.kron(
            uniform(0.55, 1.0, n, data.IMAGE_SIZE // 2, data.IMAGE_SIZE // 2),
            np.ones((2, 2)))[..., None],
        "colour specks on up to 2% of the object": np.where(speck(0.02)[..., None],
                                                            rng.uniform(0, 1, clean.shape), clean),
    }
    halfway = uniform(0.4, 0.6)[:, None, None]
    outline = (own > -uniform(1.0, 2.0)[:, None, None])[..., None]
    other_bits = np.stack([1 - bits[:, 0], rng.integers(0, 2, n), rng.integers(0, 2, n)], 1)
    second = data.sample_latents(other_bits, rng)               # the other shape, any colour, size
    second[:, 5:7] = latents[:, 5:7] + rng.choice([-1, 1], (n, 2)) * uniform(7, 12, n, 2)
    grid = np.arange(data.IMAGE_SIZE) + 0.5
    hole_at = latents[:, 5:7] + uniform(-0.25, 0.25, n, 2) * latents[:, 4:5]
    hole = (np.hypot(grid[None, None, :] - hole_at[:, 0, None, None],
                     grid[None, :, None] - hole_at[:, 1, None, None])
            - (uniform(0.3, 0.45) * latents[:, 4])[:, None, None])
    edge_at = np.array([np.argwhere(np.abs(d) < 0.7)[rng.integers((np.abs(d) < 0.7).sum())]
                        for d in own])
    patch = (np.hypot(grid[None, None, :] - edge_at[:, 1, None, None] - 0.5,
                      grid[None, :, None] - edge_at[:, 0, None, None] - 0.5)
             < uniform(2.5, 3.0)[:, None, None])
    quarter = ((theta - uniform(0, 2 * math.pi)[:, None, None]) % (2 * math.pi)) < math.pi / 2
    rejected = dict(broken_images(n, seed + 1))
    rejected.update({
        "colour chimera (outline vs fill)": np.where(outline,
                                                     paint(own, data.CLASS_COLORS[1 - bits[:, 1]]),
                                                     clean),
        "morph 40-60% between the shapes": paint((1 - halfway) * own + halfway * other,
                                                 latents[:, 1:4]),
        "two objects (other shape)": np.maximum(clean, data.render(second)),
        "a hole": clean * data.coverage_of(-hole)[..., None],
        "a missing quarter": clean * (~quarter)[..., None],
        "a patch of the other class colour": np.where((patch & inside)[..., None],
                                                      paint(own, data.CLASS_COLORS[1 - bits[:, 1]]),
                                                      clean),
    })

    def as_images(kinds):
        return {name: np.clip(x, 0, 1).astype(np.float32) for name, x in kinds.items()}

    return as_images(accepted), as_images(rejected), bits


