"""Objects: asked for more objects than training ever showed, does a diffusion model draw them?

A toy version of Bradley, "Local Mechanisms of Compositional Generalization in Conditional
Diffusion" (arXiv 2509.16447): dit.py's objective, backbone and sampler, conditioned on object
locations, trained on 1, 2 or 3 discs (worlds/objects_world.py) and asked for 0 to 10, the paper's
range. Two flags set what it learns from and how:

    --cond all | one    the training condition: every object's location, or one of them (at random)
    --locality global   each location is a token every image token attends to; image tokens attend
                        to each other across the canvas
    --locality local    each patch token receives the locations in or next to its 4x4 patch and
                        attends to the 3x3 patches around it (each block reads a patch further)
    --locality patch    as local, but no token attends to another: a pixel reads within REACH

    python studies/objects.py --cond one --locality patch --out runs/objects-one-patch

A sample is right when it holds exactly the asked number of discs, each within 2 px of its own
asked location (objects_world.objects_right). The paper finds the models that generalize local in
both the locations and the pixels their score reads: `locality` and `pixel_locality` read the two.
Sections: config -> model -> the condition and the locality readings -> training -> sampling ->
evaluation.
"""
import argparse
import copy
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the top
import data
from worlds import objects_world
import runs
import tokenizers
from dit import Block, flow_loss, modulate, noisy, sample, sincos_positions, timestep_embedding

NAME = "objects"
SAMPLING = ("sample_steps",)    # what tools/resample.py may change
COUNTS = (1, 2, 3)              # objects in a training image
ASKED = tuple(range(11))        # objects asked at evaluation: 0 to 10, the paper's range
BEYOND = f"{max(COUNTS) + 1}-{max(ASKED)}"      # the numbers asked that training never showed
PATCH, SIDE = 4, data.IMAGE_SIZE // 4           # 4x4 patches, an 8x8 grid of them
# --locality patch, in every block: a pixel's prediction reads x_t in its own patch alone (pixel
# centres at most PATCH - 1 apart in x and in y) and the locations neighbours() gives that patch
# (its own and the 8 around: at most 2 PATCH - 0.5 from its pixel centres in x and in y)
REACH = {"x_t": PATCH - 1, "locations": 2 * PATCH - 0.5}           # px, max-norm: 3 and 7.5
# As locality's radius (Euclidean: sqrt 2 the max-norm, plus the 0.5 px nudge, since a moved
# location is read where it was and where it went): 11.1 px. pixel_locality's 6 px holds the x_t
# reach from an object, half a pixel from its pixel's centre: sqrt 2 (3 + 0.5) = 4.9 px
REACH_RADIUS = math.sqrt(2) * REACH["locations"] + 0.5


# -------------------------------------------------------------------------------- config
# Every value a run uses unless a flag says otherwise (dit.py's recipe, 1500 steps); config.json
# records each. 16 samples of each number asked: 176 a reading.
DEFAULTS = dict(steps=1500, batch_size=64, lr=2e-3, lr_schedule="constant", warm_up_steps=200,
                weight_decay=0.0, ema_decay=0.999, adamw_betas=[0.9, 0.99], clip_norm=1.0,
                width=128, depth=4, heads=4, eval_every=250, samples_per_comp=16,
                # what the condition holds and how it enters; dit.py's noise levels and sampler
                cond="all", locality="global", time_dist="logit-normal", sample_steps=25)


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    runs.add_common_arguments(parser, NAME, DEFAULTS, shapes2d=False)
    parser.add_argument("--cond", default=DEFAULTS["cond"], choices=("all", "one"),
                        help="what the training condition says: every object's location or one")
    parser.add_argument("--locality", default=DEFAULTS["locality"],
                        choices=("global", "local", "patch"),
                        help="how the locations enter: tokens all see, or each patch's neighbours "
                             "only (local: patches attend to the 3x3 around them; patch: to none)")
    parser.add_argument("--sample-steps", type=int, default=DEFAULTS["sample_steps"],
                        help="Euler steps when sampling")
    parser.add_argument("--time-dist", default=DEFAULTS["time_dist"],
                        choices=("logit-normal", "uniform"),
                        help="how training draws t: sigmoid(0.8 n + 0.8) (to noise) or U(0, 1)")
    return parser, parser.parse_args(argv)


def get_config(argv=None):
    return runs.start_run(*parse(argv), NAME)


# --------------------------------------------------------------------------------- model
def fourier(u, bands=6):
    """Coordinates u (..., 2) in about [-1, 1] -> u, sin, cos of 2^k pi u: (..., 2 + 4 bands)."""
    angles = u[..., None] * math.pi * 2.0 ** torch.arange(bands, device=u.device)  # (..., 2, bands)
    return torch.cat([u, angles.sin().flatten(-2), angles.cos().flatten(-2)], -1)


def neighbours(points, present):
    """(B, T, K) bool: asked location k lies in token j's patch or in one of the 8 around it."""
    cell = (points / PATCH).floor().clamp(0, SIDE - 1)          # (B, K, 2): the location's patch
    side = torch.arange(SIDE, device=points.device)
    grid = torch.stack(torch.meshgrid(side, side, indexing="xy"), -1).reshape(-1, 2)   # (T, 2)
    apart = (cell[:, None] - grid[None, :, None].to(points)).abs().amax(-1)  # (B, T, K) patches
    return (apart <= 1) & present[:, None, :]


class ObjectsDiT(nn.Module):
    """dit.py's network with asked locations for a condition: points (B, K, 2) in pixels, present
    (B, K) False where a row asks fewer than K. The time alone drives adaLN. locality: global,
    local or patch (the module docstring)."""

    def __init__(self, locality, width=128, depth=4, heads=4, length=64):
        super().__init__()
        self.locality, self.heads = locality, heads
        self.embed = nn.Linear(PATCH * PATCH * 3, width)
        self.register_buffer("positions", sincos_positions(width, int(length ** 0.5)))
        self.place = nn.Sequential(nn.Linear(26, width), nn.SiLU(), nn.Linear(width, width))
        side = torch.arange(SIDE)
        centres = torch.stack(torch.meshgrid(side, side, indexing="xy"), -1)
        self.register_buffer("centres", (centres.reshape(-1, 2) + 0.5) * PATCH)   # (T, 2) pixels
        apart = (self.centres[:, None] - self.centres[None]).abs().amax(-1) / PATCH
        self.register_buffer("far", apart > 1)                  # (T, T): beyond the 3x3 around
        self.time = nn.Sequential(nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width))
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.final_norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Linear(width, 2 * width)
        self.head = nn.Linear(width, PATCH * PATCH * 3)
        for layer in (self.final_modulation, self.head):  # adaLN-Zero: output starts at 0
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def local_condition(self, points, present):
        """(B, T, D): each token's sum over the asked locations near it (neighbours) of an embedding
        of where the location sits from the token's patch centre; 0 where none is near."""
        offset = (points[:, None] - self.centres[None, :, None]) / (1.5 * PATCH)   # (B, T, K, 2)
        return (self.place(fourier(offset)) * neighbours(points, present)[..., None]).sum(2)

    def forward(self, x_t, t, values, present):
        """Predicts the clean tokens x_0 (B, T, C) from x_t, the time t (B,) and the asked locations
        (values: points (B, K, 2) in pixels; present (B, K))."""
        c = self.time(timestep_embedding(t, self.time[0].in_features))         # (B, D)
        h = self.embed(x_t) + self.positions                                # (B, T, D)
        length = h.shape[1]
        if self.locality == "global":     # the locations as K more tokens; an absent one unread
            where = self.place(fourier(values / data.IMAGE_SIZE * 2 - 1))          # (B, K, D)
            h = torch.cat([h, where], 1)                                           # (B, T + K, D)
            unread = torch.cat([present.new_zeros(len(h), length), ~present], 1)      # (B, T + K)
            # (B * heads, L, L), image-major as nn.MultiheadAttention reads it: row b * heads + k
            mask = unread[:, None].expand(-1, h.shape[1], -1).repeat_interleave(self.heads, 0)
        elif self.locality == "local":
            h, mask = h + self.local_condition(values, present), self.far
        else:   # patch: each token attends to itself alone (a softmax over one): a per-token map
            others = ~torch.eye(length, dtype=torch.bool, device=h.device)  # (T, T)
            h, mask = h + self.local_condition(values, present), others
        for block in self.blocks:
            h = block(h, c, mask)
        with runs.full_precision(h.device):                 # x0_hat, weighed up to 1/t^2 = 400
            shift, scale = self.final_modulation(F.silu(c.float()))[:, None].chunk(2, -1)
            return self.head(modulate(self.final_norm(h[:, :length].float()), shift, scale))


def build(config):
    """The network a run trains, shaped by its config, and its tokenizer: the pixels."""
    return ObjectsDiT(config["locality"], config["width"], config["depth"], config["heads"]), \
        tokenizers.ContinuousTokenizer("pixels")


# ------------------------------------------------------- the condition and the locality readings
def padded(positions, device="cpu", filled=None):
    """A list of (n_i, 2) position arrays -> points (B, K, 2) and present (B, K) on device, K the
    largest n_i; an absent location's point is (0, 0). filled: padded_on_host(positions), already
    on the device."""
    if filled is None:
        (filled,) = data.to_device([padded_on_host(positions)], device)
    return filled.nan_to_num(0.0), ~filled[..., 0].isnan()


def on_device(images, positions, device):
    """A training batch's images (B, H, W, 3) and its told positions, padded (points, present), on
    device: one copy from the host."""
    images, filled = data.to_device([images, padded_on_host(positions)], device)
    return (images, *padded(positions, filled=filled))


def padded_on_host(positions):
    """The positions in one (B, K, 2) tensor on the host, NaN where a row asks fewer than K."""
    filled = torch.full((len(positions), max([len(p) for p in positions] + [1]), 2), torch.nan)
    for i, p in enumerate(positions):
        filled[i, :len(p)] = torch.as_tensor(p)
    return filled


def told(positions, cond, rng):
    """What the training condition says of each image: every object's location (all), or one of
    them chosen at random (one)."""
    return positions if cond == "all" else [p[rng.integers(len(p))][None] for p in positions]


def near_pixels(centres, radius):
    """(B, H, W) bool: the pixels whose centres lie within radius px of each image's point
    (centres (B, 2), in pixels)."""
    grid = torch.arange(data.IMAGE_SIZE, device=centres.device) + 0.5
    return ((grid[None, None, :] - centres[:, 0, None, None]) ** 2
            + (grid[None, :, None] - centres[:, 1, None, None]) ** 2) <= radius ** 2


def locality(model, x_0, positions, t, rng, radius=6.0, nudge=0.5):
    """Conditional locality: the share of the predicted image's change, when the first asked
    location moves by `nudge` px (in x, then in y: the two energies summed), within `radius` px of
    it; x_0 noised to time t once, the model told t. 1 is local (and so is changing nothing); a
    change spread evenly over the canvas gives the disc's share of it, about 0.11. A 0-dim tensor
    on the model's device."""
    device = next(model.parameters()).device
    x_0, (points, present) = x_0.to(device), padded(positions, device)
    eps = torch.randn(x_0.shape, generator=rng, device=device)
    x_t = noisy(x_0, torch.full((len(x_0),), t, device=device), eps)   # one x_t for every call
    time = torch.full((len(x_0),), t, device=device)                    # and the model is told t
    first = (torch.arange(points.shape[1], device=device) == 0)[:, None]          # (K, 1)
    moves = [nudge * axis * first for axis in torch.eye(2, device=device)]   # in x, then in y
    with torch.no_grad():
        base = model(x_t, time, points, present)
        change = sum((model(x_t, time, points + move, present) - base) ** 2 for move in moves)
    energy = tokenizers.unpatchify(change, PATCH).sum(-1)       # (B, H, W): both moves' energy
    total = energy.sum()
    share = (energy * near_pixels(points[:, 0], radius)).sum() / total.clamp(min=1e-30)
    return torch.where(total > 0, share, 1.0)                       # a move that changes nothing


def pixel_locality(model, x_0, positions, t, rng, radius=6.0):
    """Spatial locality, the paper's other half: where the prediction at an object the model is
    not told of reads x_t from. Told each image's first location alone, the gradient of x0_hat at
    the second object's pixel (a random mix of its channels) with respect to x_t; the share of its
    energy within `radius` px of that object. 1 is local (and so is reading no pixel); reading every
    pixel alike gives the disc's share, about 0.11. The score ((1 - t) x0_hat - x_t) / t^2 adds
    only the pixel itself. A 0-dim tensor on the model's device."""
    if min(counts := [len(p) for p in positions]) < 2:
        raise ValueError(f"pixel_locality: 2 objects or more in each image, got {set(counts)}")
    device = next(model.parameters()).device
    x_0, (points, present) = x_0.to(device), padded([p[:1] for p in positions], device)
    second = padded([p[1:2] for p in positions], device)[0][:, 0]                 # (B, 2) pixels
    time = torch.full((len(x_0),), t, device=device)
    x_t = noisy(x_0, time, torch.randn(x_0.shape, generator=rng, device=device))
    x_t.requires_grad_(True)
    column, row = second.floor().long().clamp(0, data.IMAGE_SIZE - 1).unbind(-1)   # its pixel
    with torch.enable_grad():
        x0_hat = model(x_t, time, points, present).float()
        image = tokenizers.unpatchify(x0_hat, PATCH)                          # (B, H, W, 3)
        there = image[torch.arange(len(x_0), device=device), row, column]          # (B, 3)
        mix = torch.randn(there.shape, generator=rng, device=device)
        (gradient,) = torch.autograd.grad((there * mix).sum(), x_t)
    energy = tokenizers.unpatchify(gradient ** 2, PATCH).sum(-1)                      # (B, H, W)
    total = energy.sum()
    share = (energy * near_pixels(second, radius)).sum() / total.clamp(min=1e-30)
    return torch.where(total > 0, share, 1.0)                       # a prediction that reads none


# ----------------------------------------------------------------------------- training
def train(config):
    device = torch.device(config["device"])
    torch.manual_seed(config["seed"])
    rng = torch.Generator(device).manual_seed(config["seed"])          # t and eps, on the device
    # where the discs go: a host generator (on the CPU the same one, a single stream of draws)
    placing = rng if device.type == "cpu" else torch.Generator().manual_seed(config["seed"])
    model, tokenizer = build(config)
    model = model.to(device)
    ema = copy.deepcopy(model).requires_grad_(False)                   # the network evaluations use
    if config["compile"]:                                # --compile: the blocks, for long runs
        for block in model.blocks:
            block.compile(backend=config["compile"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"], betas=config["adamw_betas"],
                                  weight_decay=config["weight_decay"], fused=device.type == "cuda")
    scaler = runs.grad_scaler(device)                                       # fp16 only: runs.py
    checkpoints = runs.Checkpoints(config, model=model, ema=ema, optimizer=optimizer,
                                   scaler=scaler, rng=rng, placing_rng=placing)
    weights, ema_weights = list(model.parameters()), list(ema.parameters())
    start = checkpoints.resume()                               # 0, or the step --resume goes on
    for step in tqdm(range(start, config["steps"]), NAME, config["steps"], initial=start):
        # new images each step, placed and rendered on the host, then copied without a wait
        draws = np.random.default_rng(int(torch.randint(2 ** 62, (1,), generator=placing)))
        positions, images = objects_world.training_batch(COUNTS, config["batch_size"], draws)
        images, values, present = on_device(images, told(positions, config["cond"], draws), device)
        batch = tokenizer.encode(images)                                    # (B, T, C)
        for group in optimizer.param_groups:                            # warm-up, then the schedule
            group["lr"] = runs.learning_rate(config, step)
        with runs.autocast(device):                                         # bf16 or fp16 on a GPU
            loss = flow_loss(model, batch, values, present, rng, config["time_dist"])
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)                                          # clip true gradients
        torch.nn.utils.clip_grad_norm_(weights, config["clip_norm"])
        scaler.step(optimizer)
        scaler.update()
        decay = min(config["ema_decay"], (1 + step) / (10 + step))          # EMA with warm-up
        with torch.no_grad():
            torch._foreach_lerp_(ema_weights, weights, 1 - decay)    # ema += (1 - d)(model - ema)
        if checkpoints.due(step + 1):                # the loss is read here, not at every step
            draw_and_read(ema, tokenizer, config, step + 1, loss)
            checkpoints.save(step + 1)


# ----------------------------------------------------------------------------- sampling
def draw(model, tokenizer, config, values, present, rng):
    """What an evaluation draws: images (N, H, W, 3) in [0, 1] for the asked locations, by dit.py's
    Euler sampler."""
    tokens = sample(model, values, present, tokenizer.dim, config["sample_steps"], rng)
    return tokenizer.decode(tokens).clip(0, 1)


# --------------------------------------------------------------------------- evaluation
def readings(images, positions):
    """Per sample: right (objects_world.objects_right), the share of asked locations found (a disc
    within 2 px), and the objects drawn where none was asked."""
    right = np.array([objects_world.objects_right(image, asked)
                      for image, asked in zip(images, positions)])
    found, extra = [], []
    for image, asked in zip(images, positions):
        centres = np.array([c for c, _ in objects_world.find_objects(image)]).reshape(-1, 2)
        close = np.linalg.norm(centres[:, None] - np.asarray(asked)[None], axis=-1) <= 2.0
        found.append(close.any(0).mean() if len(asked) else 1.0)        # close: (found, asked)
        extra.append(int((~close.any(1)).sum()))
    return right, np.array(found), np.array(extra)


def draw_and_read(model, tokenizer, config, step, loss):
    """One evaluation: read the step's loss, ask for 0 to 10 objects (the same locations at every
    evaluation), judge the samples, read the denoiser's localities at t = 0.2, 0.5, 0.8, write the
    run files and print the step's line. The counts go up in order, so the locations and the
    sampling noise of 0 to n asked do not depend on how many more are."""
    loss = runs.read_loss(loss, step, config)
    model.eval()
    device = next(model.parameters()).device
    rng = np.random.default_rng(config["seed"])
    counts = np.repeat(ASKED, config["samples_per_comp"])
    positions = objects_world.sample_positions(counts, rng)
    values, present = padded(positions, device)
    sampling = torch.Generator(device).manual_seed(config["seed"] + 1)
    images = draw(model, tokenizer, config, values, present, sampling)
    threes = objects_world.sample_positions([3] * 16, rng)          # three objects, all asked
    x_0 = tokenizer.encode(torch.as_tensor(objects_world.render_objects(threes), device=device))

    def by_time(reading, **settings):
        return {str(t): float(reading(model, x_0, threes, t, sampling, **settings))
                for t in (0.2, 0.5, 0.8)}
    localities = {"locality": by_time(locality), "pixel_locality": by_time(pixel_locality),
                  "locality_within_reach": by_time(locality, radius=REACH_RADIUS)}
    model.train()
    right, found, extra = readings(images, positions)
    per = {key: {str(n): float(x[counts == n].mean()) for n in ASKED}        # by the number asked
           for key, x in (("exact", right), ("found", found), ("extra", extra))}
    trained, beyond = np.isin(counts, COUNTS), counts > max(COUNTS)
    metrics = {"step": step, "loss": float(loss), "seconds": runs.elapsed(config), **per,
               **localities, "trained": float(right[trained].mean()),
               "beyond": float(right[beyond].mean()), "found_trained": float(found[trained].mean()),
               "found_beyond": float(found[beyond].mean())}
    images, points = runs.as_uint8(images), values.cpu().numpy()
    runs.keep(config["out"], metrics, images=images, counts=counts, points=points)
    save_grid(f"{config['out']}/samples.png", images, counts, points,
              f"objects.py --cond {config['cond']} --locality {config['locality']}, step {step}")
    tqdm.write(f"step {step}: {headline(metrics)}")
    return metrics


def save_grid(path, images, counts, points, title="", per_row=12):
    """One row per number asked (those the samples hold), the asked locations marked by small white
    crosses: the samples (uint8) tiled into one picture (one axes, quick to draw)."""
    plt = runs.pyplot()
    asked = [n for n in ASKED if (counts == n).any()]
    size, cell = data.IMAGE_SIZE, data.IMAGE_SIZE + 2                       # a 2 px white gap
    tiled = np.full((len(asked) * cell, per_row * cell, 3), 255, np.uint8)
    fig, ax = plt.subplots(figsize=(per_row * 0.62, len(asked) * 0.66))
    ax.imshow(tiled, interpolation="nearest")                     # the frame, filled in below
    for row, n in enumerate(asked):
        ax.text(-3, row * cell + size / 2, f"{n} asked", ha="right", va="center", fontsize=6)
        for column, i in enumerate(np.flatnonzero(counts == n)[:per_row]):
            x, y = column * cell, row * cell
            tiled[y:y + size, x:x + size] = images[i]
            ax.plot(x + points[i, :n, 0] - 0.5, y + points[i, :n, 1] - 0.5, "+", color="white",
                    markersize=2.5, mew=0.5)
    ax.images[0].set_data(tiled)
    ax.set_axis_off()
    fig.suptitle(title, fontsize=8)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.01, top=0.93)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def headline(metrics):
    """The line each evaluation prints: exact (the headline) and found, trained and beyond."""
    return (f"exact (found): trained counts 1-3 {100 * metrics['trained']:.1f} "
            f"({100 * metrics['found_trained']:.1f}) | beyond, {BEYOND} "
            f"{100 * metrics['beyond']:.1f} ({100 * metrics['found_beyond']:.1f}) "
            f"| none asked {100 * metrics['exact']['0']:.1f}")


def report(metrics):
    """The closing table: for each number asked, the share drawn exactly, the asked locations found,
    the objects drawn where none was asked; the denoiser's localities by noise level."""
    print(f"{'asked':>5} {'exact':>6} {'found':>6} {'extra':>6}")
    for n in map(str, ASKED):
        print(f"{n:>5} {100 * metrics['exact'][n]:5.1f}% {100 * metrics['found'][n]:5.1f}% "
              f"{metrics['extra'][n]:6.2f}")
    for key, what in (("locality", "a moved location's change within 6 px"),
                      ("locality_within_reach", f"it within {REACH_RADIUS:.1f} px, REACH"),
                      ("pixel_locality", "an untold object's gradient within 6 px")):
        print(f"{key} (the share of {what}): "
              + ", ".join(f"t={t} {100 * v:.0f}%" for t, v in metrics[key].items()))
    print(headline(metrics))


def main(argv=None):
    runs.run(NAME, get_config(argv), train, closing=report)


if __name__ == "__main__":
    main()
