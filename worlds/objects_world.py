"""The objects world of objects.py: how many discs, where, drawn how, and counted how.

N small discs of one colour on Shapes2D's 32x32 canvas, each at its own cell of a 5x5 grid of
cells 6 px apart, jittered by up to 0.5 px, so that two never touch. The latents are the
positions, (x, y) in pixels, one row an object. A drawn image is read by counting its discs
(find_objects) and checking each is where it was asked (objects_right).
"""
import numpy as np

import data

GRID = np.array([4.0, 10.0, 16.0, 22.0, 28.0])                  # cell centres along each axis
CELLS = np.stack(np.meshgrid(GRID, GRID, indexing="xy"), -1).reshape(-1, 2)   # (25, 2), row-major
DISC_RADIUS = 1.8          # with the 0.5 px soft edge, discs 5 px apart stay 0.4 px apart
OBJECT_COLOR = data.CLASS_COLORS[0]


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
    images = np.zeros((len(positions), data.IMAGE_SIZE, data.IMAGE_SIZE, 3), np.float32)
    for image, points in zip(images, positions):
        if len(points):
            points = np.asarray(points, dtype=np.float32)
            discs, _ = data.outline_distances(np.full(len(points), DISC_RADIUS, np.float32),
                                         points[:, 0], points[:, 1])
            image[:] = data.coverage_of(discs).max(0)[..., None] * OBJECT_COLOR
    return images


def training_batch(counts, size, draws):
    """size new training images, each of a number of discs drawn from counts, placed by draws (a
    numpy Generator) and rendered on the host: (positions, a list of (n, 2) arrays; images
    (B, H, W, 3))."""
    positions = sample_positions(draws.choice(counts, size), draws)
    return positions, render_objects(positions)


# ---------------------------------------------------------------- counting the discs drawn
OBJECT_AREA = (5, 20)      # pixels of one drawn disc of objects.py (a clean one covers about 12)


def find_objects(image, threshold=0.3):
    """The objects of one image: 8-connected parts of its bright pixels (max channel > threshold),
    as (centroid (x, y) in pixels, area in pixels); parts of one or two pixels are specks, left
    out."""
    bright = np.asarray(image).max(-1) > threshold
    labels = data.components(bright[None])[0]
    found = []
    for label in np.unique(labels[labels > 0]):
        ys, xs = np.nonzero(labels == label)
        if len(xs) > 2:
            found.append(((xs.mean() + 0.5, ys.mean() + 0.5), len(xs)))
    return found


def objects_right(image, asked, radius=2.0):
    """One image drew what was asked: as many objects as asked positions, each of a disc's area,
    each within `radius` pixels of its own asked position (and so none elsewhere)."""
    found = find_objects(image)
    if len(found) != len(asked):
        return False
    free = [tuple(p) for p in np.asarray(asked, dtype=np.float64).reshape(-1, 2)]
    for (x, y), area in found:
        close = [p for p in free if (p[0] - x) ** 2 + (p[1] - y) ** 2 <= radius ** 2]
        if not close or not OBJECT_AREA[0] <= area <= OBJECT_AREA[1]:
            return False
        free.remove(close[0])                      # objects sit 5 px apart: at most one is close
    return True
