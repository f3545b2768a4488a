"""DiT: a Diffusion Transformer over all tokens, the continuous end of the ladder.

The model sees every token of a noisy image at once and is trained to denoise it
(rectified flow: a straight path from the image to Gaussian noise). It is conditioned on
the factors through adaLN-Zero. Trained on the seen compositions of Shapes2D only, judged
by probe.py on all eight.

    python dit.py                                   # the default run
    python dit.py --steps 10000 --lr-schedule cosine --out runs/dit-10k   # the long-run recipe

Sections: config -> model -> flow matching -> training -> sampling -> evaluation.
"""
import argparse
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

import captions
import data
import runs
import tokenizers
import worlds

NAME = "dit"
SAMPLING = ("sample_steps",)                                     # what tools/resample.py may change


# -------------------------------------------------------------------------------- config
# Every value a run uses unless a flag says otherwise; config.json records each. The first lines
# are the ladder's one recipe, the same in every generator (tests/test_ladder.py holds the copies
# together); the last are this generator's own.
DEFAULTS = dict(steps=2000, batch_size=64, lr=2e-3, lr_schedule="constant", warm_up_steps=200,
                weight_decay=0.0, ema_decay=0.999, adamw_betas=[0.9, 0.99], clip_norm=1.0,
                width=128, depth=4, heads=4, world="shapes2d", seen_count=None, data="fixed",
                train_per_comp=5000, cond="continuous", cond_drop=0.1, eval_every=250,
                samples_per_comp=32,
                # DiT's tokens, noise levels and sampler (lr 2e-3: results/recipe/README.md)
                tokenizer="pixels", time_dist="logit-normal", sample_steps=25)


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=runs.Help)
    runs.add_common_arguments(parser, NAME, DEFAULTS)
    add_arguments(parser)
    return parser, runs.parse_args(parser, argv)


def add_arguments(parser):
    """The generator's own flags, each at its DEFAULTS value."""
    parser.add_argument("--tokenizer", default=DEFAULTS["tokenizer"],
                        choices=("pixels", "codebook", "pca"),
                        help="continuous tokens: raw 4x4 patches, the codebook's vectors, or PCA")
    parser.add_argument("--time-dist", default=DEFAULTS["time_dist"],
                        choices=("logit-normal", "uniform"),
                        help="how training draws t: sigmoid(0.8 n + 0.8), leaning to noise, "
                             "or U(0, 1), even over noise levels")
    parser.add_argument("--sample-steps", type=int, default=DEFAULTS["sample_steps"],
                        help="Euler steps when sampling")


def get_config(argv=None):
    return runs.start_run(*parse(argv), NAME)


# --------------------------------------------------------------------------------- model
def sincos_positions(width, side):
    """Fixed 2D sin-cos position embeddings for a side x side grid: (side*side, width)."""
    quarter = width // 4
    frequency = 1.0 / 10000 ** (torch.arange(quarter) / quarter)
    y, x = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
    angles = [axis.flatten()[:, None].float() * frequency for axis in (y, x)]
    return torch.cat([f(a) for a in angles for f in (torch.sin, torch.cos)], 1)


def modulate(x, shift, scale):
    """adaLN: the condition shifts and scales the normalised activations."""
    return x * (1 + scale) + shift


class ConditionEmbedding(nn.Module):
    """One embedding per factor group, added; a learned null stands in for a hidden one.
    A caption (--cond text, text-partial) is read by captions.py's text encoder instead."""

    def __init__(self, width, cond="continuous", groups=data.COND_GROUPS):
        super().__init__()
        self.text = captions.TextEncoder(width) if cond in data.TEXT_MODES else None
        if self.text is None:
            self.groups = groups                        # the world's (name, first, end) of each
            self.project = nn.ModuleList(nn.Linear(hi - lo, width) for _, lo, hi in groups)
            self.null = nn.Parameter(torch.zeros(len(groups), width))

    def forward(self, values, present):
        """values (B, 7) and present (B, 4); for a caption, word ids and present (B, L)."""
        if self.text is not None:
            return self.text(values, present)                               # (B, D)
        parts = [torch.where(present[:, g, None], project(values[:, lo:hi]), self.null[g])
                 for g, (project, (_, lo, hi)) in enumerate(zip(self.project, self.groups))]
        return torch.stack(parts).sum(0)                                    # (B, D)


class Block(nn.Module):
    """Transformer block with adaLN-Zero: shift, scale and gate come from the condition."""

    def __init__(self, width, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * width, width))
        self.modulation = nn.Linear(width, 6 * width)
        nn.init.zeros_(self.modulation.weight)            # gates start at 0: block = identity
        nn.init.zeros_(self.modulation.bias)

    def forward(self, x, c, attn_mask=None):                                 # x (B, T, D), c (B, D)
        """attn_mask (T, T): True where a position may not look (ar.py's causal order);
        None: all see all."""
        modulation = self.modulation(F.silu(c))[:, None]                    # (B, 1, 6 D)
        shift1, scale1, gate1, shift2, scale2, gate2 = modulation.chunk(6, -1)
        h = modulate(self.norm1(x), shift1, scale1)
        x = x + gate1 * self.attention(h, h, h, attn_mask=attn_mask, need_weights=False)[0]
        h = modulate(self.norm2(x), shift2, scale2)
        return x + gate2 * self.mlp(h)


def timestep_embedding(t, width):
    """Sinusoidal features of the diffusion time t (B,) -> (B, width)."""
    half = width // 2
    frequency = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / half)
    angles = 1000 * t[:, None] * frequency                                  # (B, D/2)
    return torch.cat([angles.sin(), angles.cos()], 1)


class DiT(nn.Module):
    def __init__(self, token_dim, width=128, depth=4, heads=4, length=64,
                 cond="continuous", groups=data.COND_GROUPS):
        super().__init__()
        self.embed = nn.Linear(token_dim, width)
        self.register_buffer("positions", sincos_positions(width, int(length ** 0.5)))
        self.condition = ConditionEmbedding(width, cond, groups)
        self.time = nn.Sequential(nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width))
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.final_norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Linear(width, 2 * width)
        self.head = nn.Linear(width, token_dim)
        for layer in (self.final_modulation, self.head):  # adaLN-Zero: output starts at 0
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, x_t, t, values, present):
        """Predicts the clean tokens x_0 (B, T, C) from x_t, the time t (B,) and the condition."""
        c = self.time(timestep_embedding(t, self.time[0].in_features))      # (B, D): the time
        c = c + self.condition(values, present)                             # and the condition
        h = self.embed(x_t) + self.positions                                # (B, T, D)
        for block in self.blocks:
            h = block(h, c)
        with runs.full_precision(h.device):                 # x0_hat, weighed up to 1/t^2 = 400
            shift, scale = self.final_modulation(F.silu(c.float()))[:, None].chunk(2, -1)
            return self.head(modulate(self.final_norm(h.float()), shift, scale))


def build(config):
    """The network a run trains, shaped by its config, and its tokenizer (tokenizers.py)."""
    world = worlds.world(config)                                 # data.py's Shapes2D by default
    tokenizer = tokenizers.ContinuousTokenizer(config["tokenizer"], world)
    return DiT(tokenizer.dim, config["width"], config["depth"], config["heads"],
               cond=config["cond"], groups=world.COND_GROUPS), tokenizer


# ------------------------------------------------------------------------ flow matching
# Rectified flow: x_t = (1 - t) x_0 + t eps, t in [0, 1]; t = 0 is the image, t = 1 noise.
# The velocity along the path is v = dx_t/dt = eps - x_0. The network predicts x_0 (with
# 48-value tokens and width 128, predicting eps or v gave speckled samples; x_0 does not),
# and the velocity is derived from it: v_hat = (x_t - x0_hat) / t.
def noisy(x_0, t, eps):
    return (1 - t[:, None, None]) * x_0 + t[:, None, None] * eps           # q(x_t | x_0)


def draw_time(n, kind, rng):
    """Where training spends its effort. uniform: t ~ U(0, 1). logit-normal:
    t = sigmoid(0.8 n + 0.8), n ~ N(0, 1), median t = 0.69: fewer draws at the low noise levels
    25 sampling steps hardly visit."""
    if kind == "uniform":
        return torch.rand(n, generator=rng, device=rng.device)
    return torch.sigmoid(0.8 * torch.randn(n, generator=rng, device=rng.device) + 0.8)


def flow_loss(model, x_0, values, present, rng, time_dist="logit-normal"):
    t = draw_time(len(x_0), time_dist, rng)
    eps = torch.randn(x_0.shape, generator=rng, device=x_0.device)
    x_t = noisy(x_0, t, eps)
    x0_hat = model(x_t, t, values, present)
    # Velocity loss ||v_hat - v||^2 = ||x0_hat - x_0||^2 / t^2, t floored to keep it finite.
    weight = 1 / t.clamp(min=0.05) ** 2
    return (weight[:, None, None] * (x0_hat - x_0) ** 2).mean()


# ----------------------------------------------------------------------------- training
def train(config):
    device = torch.device(config["device"])
    torch.manual_seed(config["seed"])
    rng = torch.Generator(device).manual_seed(config["seed"])          # every draw of training
    model, tokenizer = build(config)
    model = model.to(device)
    ema = copy.deepcopy(model).requires_grad_(False)                   # the network evaluations use
    if config["compile"]:                                # --compile: the blocks, for long runs
        for block in model.blocks:
            block.compile(backend=config["compile"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"], betas=config["adamw_betas"],
                                  weight_decay=config["weight_decay"], fused=device.type == "cuda")
    scaler = runs.grad_scaler(device)                                       # fp16 only: runs.py
    training = data.TrainingData(config["data"], config["train_per_comp"], config["cond"],
                                 config["cond_drop"], tokenizer.encode, device,
                                 worlds.world(config))
    checkpoints = runs.Checkpoints(config, model=model, ema=ema, optimizer=optimizer,
                                   scaler=scaler, rng=rng)
    weights, ema_weights = list(model.parameters()), list(ema.parameters())
    start = checkpoints.resume()                               # 0, or the step --resume goes on
    for step in tqdm(range(start, config["steps"]), NAME, config["steps"], initial=start):
        batch, values, present = training.batch(config["batch_size"], rng)  # tokens, condition
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
            runs.draw_and_read(draw, ema, tokenizer, config, step + 1, loss)
            checkpoints.save(step + 1)


# ----------------------------------------------------------------------------- sampling
@torch.no_grad()
def sample(model, values, present, token_dim, steps, rng, length=64):
    """Euler integration of dx/dt = v from t = 1 (noise) to t = 0 (image)."""
    device = next(model.parameters()).device                      # every draw is made there, by rng
    values, present = values.to(device), present.to(device)
    x = torch.randn((len(values), length, token_dim), generator=rng, device=device)
    times = torch.linspace(1, 0, steps + 1)
    for t, t_next in zip(times[:-1], times[1:]):
        t_batch = torch.full((len(x),), float(t), device=device)
        with runs.autocast(device):
            x0_hat = model(x, t_batch, values, present).float()
        velocity = (x - x0_hat) / t                                     # v_hat = (x_t - x0_hat) / t
        x = x + (t_next - t) * velocity                              # x_{t'} = x_t + (t' - t) v_hat
    return x


# --------------------------------------------------------------------------- evaluation
def draw(model, tokenizer, config, values, present, rng):
    """What an evaluation draws: images (N, H, W, 3) in [0, 1] for the conditions
    (values, present)."""
    tokens = sample(model, values, present, tokenizer.dim, config["sample_steps"], rng)
    return tokenizer.decode(tokens).clip(0, 1)


def main(argv=None):
    runs.run(NAME, get_config(argv), train)


if __name__ == "__main__":
    main()
