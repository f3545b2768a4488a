"""Objects: asked for more objects than training ever showed, does a diffusion model draw them?

The neighbouring question to the ladder's (Bradley, "Local Mechanisms of Compositional
Generalization in Conditional Diffusion", arXiv 2509.16447): a model conditioned on object
locations is trained on images of 1, 2 or 3 discs (data.py's second world) and asked for 0 to 8.
It is dit.py's objective and backbone; two flags set what it learns from and how:

    --cond all          the training condition gives the location of every object in the image
    --cond one          it gives one object's location, chosen at random, though the image holds more
    --locality global   each location is a token every image token attends to, and image tokens
                        attend to each other across the whole canvas
    --locality local    each image token receives only the locations in or next to its 4x4 patch,
                        and attends only to the 3x3 patches around it: the score is local by design

    python objects.py                                   # all x global: 11 minutes alone on a 2-core CPU
    python objects.py --cond one --locality local --out runs/objects-one-local

A sample is right when it holds exactly the asked number of discs, each within 2 px of its own
asked location (probe.objects_right). The backbone's blocks, the rectified-flow loss and the Euler
sampler are imported from dit.py, as jepa_maskgit.py imports maskgit.py's. Sections: config ->
model -> the condition and locality -> training -> evaluation.
"""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

import data
import probe
import runs
from dit import Block, flow_loss, modulate, noisy, sample, sincos_positions, timestep_embedding  # dit.py's method

MODEL = "objects"
SAMPLING = ("sample_steps",)    # what tools/resample.py may change
COUNTS = (1, 2, 3)              # objects in a training image
ASKED = tuple(range(9))         # objects asked at evaluation: 0 to 8
PATCH, SIDE = 4, data.IMAGE_SIZE // 4                                    # 4x4 patches, an 8x8 grid of them


# -------------------------------------------------------------------------------- config
def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    runs.add_common_arguments(parser, steps=1500, eval_every=250, model=MODEL, lr=2e-3, shapes2d=False)
    parser.set_defaults(samples_per_comp=16)         # 16 samples of each number asked, 0 to 8: 144 a reading
    parser.add_argument("--cond", default="all", choices=("all", "one"),
                        help="what the training condition says: every object's location, or one object's")
    parser.add_argument("--locality", default="global", choices=("global", "local"),
                        help="how the locations enter: tokens all see, or each patch's own neighbours only")
    parser.add_argument("--width", type=int, default=128)   # the ladder's backbone:
    parser.add_argument("--depth", type=int, default=4)     # the same in every generator
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--sample-steps", type=int, default=25, help="Euler steps when sampling")
    parser.add_argument("--time-dist", default="logit-normal", choices=("logit-normal", "uniform"),
                        help="how training draws t: sigmoid(0.8 n + 0.8), leaning to noise, or U(0, 1)")
    args = parser.parse_args(argv)
    if args.sample_steps < 1:
        parser.error(f"--sample-steps must be a positive integer, got {args.sample_steps}")
    return parser, args


def get_config(argv=None):
    return runs.start_run(*parse(argv), MODEL)


# --------------------------------------------------------------------------------- model
def fourier(u, bands=6):
    """Features of coordinates u (..., 2) in about [-1, 1]: u and sin, cos of 2^k pi u -> (..., 2 + 4 bands)."""
    angles = u[..., None] * math.pi * 2.0 ** torch.arange(bands, device=u.device)     # (..., 2, bands)
    return torch.cat([u, angles.sin().flatten(-2), angles.cos().flatten(-2)], -1)


def neighbours(points, present):
    """(B, T, K) bool: asked location k lies in token j's patch or in one of the 8 around it."""
    cell = (points / PATCH).floor().clamp(0, SIDE - 1)                      # (B, K, 2): the location's patch
    grid = torch.stack(torch.meshgrid(torch.arange(SIDE), torch.arange(SIDE), indexing="xy"), -1).reshape(-1, 2)
    apart = (cell[:, None] - grid[None, :, None].to(points)).abs().amax(-1)  # (B, T, K): patches apart
    return (apart <= 1) & present[:, None, :]


class ObjectsDiT(nn.Module):
    """dit.py's network with asked locations for a condition: points (B, K, 2) in pixels, present
    (B, K) False where a row asks fewer than K. The time alone drives adaLN."""

    def __init__(self, locality, width=128, depth=4, heads=4, length=64):
        super().__init__()
        self.locality, self.heads = locality, heads
        self.embed = nn.Linear(PATCH * PATCH * 3, width)
        self.register_buffer("positions", sincos_positions(width, int(length ** 0.5)))
        self.place = nn.Sequential(nn.Linear(26, width), nn.SiLU(), nn.Linear(width, width))   # a location
        centres = torch.stack(torch.meshgrid(torch.arange(SIDE), torch.arange(SIDE), indexing="xy"), -1)
        self.register_buffer("centres", (centres.reshape(-1, 2) + 0.5) * PATCH)                 # (T, 2) pixels
        apart = (self.centres[:, None] - self.centres[None]).abs().amax(-1) / PATCH
        self.register_buffer("far", apart > 1)                              # (T, T): beyond the 3x3 around
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
        offset = (points[:, None] - self.centres[None, :, None]) / (1.5 * PATCH)       # (B, T, K, 2)
        return (self.place(fourier(offset)) * neighbours(points, present)[..., None]).sum(2)

    def forward(self, x_t, t, values, present):
        """Predicts the clean tokens x_0 (B, T, C) from x_t, the time t (B,) and the asked locations
        (values: points (B, K, 2) in pixels; present (B, K))."""
        c = self.time(timestep_embedding(t, self.time[0].in_features))         # (B, D)
        h = self.embed(x_t) + self.positions                                # (B, T, D)
        length = h.shape[1]
        if self.locality == "local":
            h, mask = h + self.local_condition(values, present), self.far
        else:                                    # the locations as K more tokens; an absent one is never read
            h = torch.cat([h, self.place(fourier(values / data.IMAGE_SIZE * 2 - 1))], 1)     # (B, T + K, D)
            hidden = torch.cat([present.new_zeros(len(h), length), ~present], 1)          # (B, T + K)
            mask = hidden[:, None].expand(-1, h.shape[1], -1).repeat_interleave(self.heads, 0)
        for block in self.blocks:
            h = block(h, c, mask)
        shift, scale = self.final_modulation(F.silu(c))[:, None].chunk(2, -1)
        return self.head(modulate(self.final_norm(h[:, :length]), shift, scale))


def build(config):
    """The network a run trains, shaped by its config, and its tokenizer: the pixels (data.py)."""
    return ObjectsDiT(config["locality"], config["width"], config["depth"], config["heads"]), \
        data.ContinuousTokenizer("pixels")


# ------------------------------------------------------------- the condition and locality
def padded(positions):
    """A list of (n_i, 2) position arrays -> points (B, K, 2) and present (B, K), K = the largest n_i."""
    k = max([len(p) for p in positions] + [1])
    points, present = torch.zeros(len(positions), k, 2), torch.zeros(len(positions), k, dtype=torch.bool)
    for i, p in enumerate(positions):
        points[i, :len(p)], present[i, :len(p)] = torch.as_tensor(p), True
    return points, present


def told(positions, cond, rng):
    """What the training condition says of each image: every object's location (all), or one of
    them chosen at random (one)."""
    return positions if cond == "all" else [p[rng.integers(len(p))][None] for p in positions]


def locality(model, x_0, positions, t, generator, radius=6.0, nudge=0.5):
    """The share of the predicted image's change, when the first asked location moves by `nudge` px
    (in x, then in y), that falls within `radius` px of that location: 1 is local; a change spread
    evenly over the canvas gives the disc's share of it, about 0.11."""
    points, present = padded(positions)
    x_t = noisy(x_0, torch.full((len(x_0),), t), torch.randn(x_0.shape, generator=generator))
    time = torch.full((len(x_0),), t)
    with torch.no_grad():
        base = model(x_t, time, points, present)
        change = sum((model(x_t, time, points + shift, present) - base) ** 2
                     for shift in (torch.tensor([nudge, 0.0]) * (torch.arange(points.shape[1]) == 0)[:, None],
                                   torch.tensor([0.0, nudge]) * (torch.arange(points.shape[1]) == 0)[:, None]))
    energy = data.unpatchify(change, PATCH).sum(-1)                         # (B, H, W)
    grid = torch.arange(data.IMAGE_SIZE) + 0.5
    near = ((grid[None, None, :] - points[:, 0, 0, None, None]) ** 2
            + (grid[None, :, None] - points[:, 0, 1, None, None]) ** 2) <= radius ** 2
    return float((energy * near).sum() / energy.sum().clamp(min=1e-20))


# ----------------------------------------------------------------------------- training
def train(config):
    device = torch.device(config["device"])
    torch.manual_seed(config["seed"])
    generator = torch.Generator().manual_seed(config["seed"])             # data, t, eps
    model, tokenizer = build(config)
    model = model.to(device)
    ema = runs.ema_copy(model)                                              # the network evaluations use
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"], betas=(0.9, 0.99),
                                  weight_decay=config["weight_decay"])
    step = 0
    if config["resume"]:
        state = runs.load_checkpoint(config)
        model.load_state_dict(state["model"])
        ema.load_state_dict(state["ema"])
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["rng"])
        step = state["step"]
    evaluations = runs.evaluation_steps(config["steps"], config["eval_every"])
    metrics = None
    progress = tqdm(range(step, config["steps"]), initial=step, total=config["steps"], desc=MODEL)
    for step in progress:
        rng = np.random.default_rng(int(torch.randint(2 ** 62, (1,), generator=generator)))
        positions = data.sample_positions(rng.choice(COUNTS, config["batch_size"]), rng)   # new images each step
        batch = tokenizer.encode(data.render_objects(positions)).float()
        values, present = padded(told(positions, config["cond"], rng))
        for group in optimizer.param_groups:                                # warm-up, then the schedule
            group["lr"] = runs.learning_rate(config, step)
        with torch.autocast(device.type, torch.bfloat16, enabled=device.type == "cuda"):
            loss = flow_loss(model, batch.to(device), values.to(device), present.to(device), generator,
                             config["time_dist"])
        runs.check_finite(loss, step + 1, config["out"])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        decay = min(0.999, (1 + step) / (10 + step))                        # EMA with warm-up
        with torch.no_grad():
            for p_ema, p in zip(ema.parameters(), model.parameters()):
                p_ema.lerp_(p, 1 - decay)
        progress.set_postfix(loss=f"{loss.item():.4f}")
        if step + 1 in evaluations:
            metrics = evaluate(ema, tokenizer, config, step + 1, loss.item())
            progress.write(f"step {step + 1}: exact, trained counts 1-3 {100 * metrics['trained']:.1f} | "
                           f"4-8 {100 * metrics['beyond']:.1f} | none asked {100 * metrics['exact']['0']:.1f}")
            runs.save_checkpoint(config["out"], model=model.state_dict(), ema=ema.state_dict(),
                                  optimizer=optimizer.state_dict(), step=step + 1, config=config,
                                  rng=generator.get_state())
    return metrics or runs.read_metrics(config["out"])[-1]


# --------------------------------------------------------------------------- evaluation
def draw(model, tokenizer, config, values, present, generator):
    """What an evaluation draws: images (N, H, W, 3) in [0, 1] for the asked locations."""
    x = sample(model, values, present, tokenizer.dim, config["sample_steps"], generator)
    return tokenizer.decode(x).clip(0, 1)


def readings(images, positions):
    """Per sample: right (probe.objects_right), the share of asked locations found (a disc within
    2 px), and the objects drawn where none was asked."""
    right = np.array([probe.objects_right(image, asked) for image, asked in zip(images, positions)])
    found, extra = [], []
    for image, asked in zip(images, positions):
        centres = np.array([c for c, _ in probe.find_objects(image)]).reshape(-1, 2)
        close = np.linalg.norm(centres[:, None] - np.asarray(asked)[None], axis=-1) <= 2.0   # (found, asked)
        found.append(close.any(0).mean() if len(asked) else 1.0)
        extra.append(int((~close.any(1)).sum()))
    return right, np.array(found), np.array(extra)


def evaluate(model, tokenizer, config, step, loss):
    """Ask for 0 to 8 objects (the same locations at every evaluation), judge the samples, read the
    denoiser's locality, and write the run files."""
    model.eval()
    rng = np.random.default_rng(config["seed"])
    counts = np.repeat(ASKED, config["samples_per_comp"])
    positions = data.sample_positions(counts, rng)
    values, present = padded(positions)
    generator = torch.Generator().manual_seed(config["seed"] + 1)
    images = draw(model, tokenizer, config, values, present, generator)
    threes = data.sample_positions([3] * 16, rng)                           # three objects, all asked
    x_0 = tokenizer.encode(data.render_objects(threes)).float()
    reach = {str(t): locality(model, x_0, threes, t, generator) for t in (0.2, 0.5, 0.8)}
    model.train()
    right, found, extra = readings(images, positions)
    per = lambda x: {str(n): float(x[counts == n].mean()) for n in ASKED}
    metrics = dict(step=step, loss=float(loss), seconds=runs.elapsed(config), exact=per(right), found=per(found),
                   extra=per(extra), locality=reach, trained=float(right[np.isin(counts, COUNTS)].mean()),
                   beyond=float(right[counts > max(COUNTS)].mean()))
    images = runs.as_uint8(images)
    runs.keep(config["out"], metrics, images=images, counts=counts, points=values.numpy())
    save_grid(f"{config['out']}/samples.png", images, counts, values.numpy(),
              f"objects.py --cond {config['cond']} --locality {config['locality']}, step {step}")
    return metrics


def save_grid(path, images, counts, points, title="", per_row=12):
    """One row per number asked (0 to 8), the asked locations marked by small white crosses."""
    plt = runs.pyplot()
    fig, axes = plt.subplots(len(ASKED), per_row, figsize=(per_row * 0.62, len(ASKED) * 0.66), squeeze=False)
    for row, n in zip(axes, ASKED):
        chosen = np.flatnonzero(counts == n)[:per_row]
        row[0].set_title(f"{n} asked", fontsize=6, loc="left", pad=1)
        for ax, i in zip(row, list(chosen) + [None] * per_row):
            ax.set_axis_off()
            if i is not None:
                ax.imshow(images[i], interpolation="nearest")
                ax.plot(points[i, :n, 0] - 0.5, points[i, :n, 1] - 0.5, "+", color="white", markersize=2.5, mew=0.5)
    fig.suptitle(title, fontsize=8)
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.93, wspace=0.05, hspace=0.3)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(metrics):
    """The closing table: for each number asked, the share drawn exactly, the asked locations found,
    the objects drawn where none was asked; the locality of the denoiser by noise level."""
    print(f"{'asked':>5} {'exact':>6} {'found':>6} {'extra':>6}")
    for n in ASKED:
        n = str(n)
        print(f"{n:>5} {100 * metrics['exact'][n]:5.1f}% {100 * metrics['found'][n]:5.1f}% {metrics['extra'][n]:6.2f}")
    print("locality (the share of a moved location's change within 6 px): "
          + ", ".join(f"t={t} {100 * v:.0f}%" for t, v in metrics["locality"].items()))
    print(f"exact: trained counts 1-3 {100 * metrics['trained']:.1f} | beyond, 4-8 {100 * metrics['beyond']:.1f} "
          f"| none asked {100 * metrics['exact']['0']:.1f}")


def main(argv=None):
    runs.run(MODEL, get_config(argv), train, closing=report)


if __name__ == "__main__":
    main()
