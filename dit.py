"""DiT: a Diffusion Transformer over all tokens, the continuous end of the ladder.

The model sees every token of a noisy image at once and is trained to denoise it
(rectified flow: a straight path from the image to Gaussian noise). It is conditioned on
the factors through adaLN-Zero. Trained on the seen compositions of Shapes2D only, judged
by probe.py on all eight.

    python dit.py                                   # the default run
    python dit.py --steps 8000 --lr-schedule cosine --out runs/dit-8k   # a long run: decay the rate

Sections: config -> model -> flow matching -> training -> sampling -> evaluation.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

import data
import runs

MODEL = "dit"
SAMPLING = ("sample_steps",)    # the settings sampling reads: tools/resample.py may change them


# -------------------------------------------------------------------------------- config
# What a run trains with unless a flag says otherwise: the ladder's one recipe, the same in every
# generator (tests/test_ladder.py holds the copies together). config.json records each value.
DEFAULTS = dict(steps=2000, batch_size=64, lr=2e-3, warm_up_steps=200, weight_decay=0.0,
                ema_decay=0.999, adamw_betas=[0.9, 0.99], clip_norm=1.0, eval_every=250,
                width=128, depth=4, heads=4)    # lr 2e-3: results/README.md, the recipe


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=runs.Help)
    runs.add_common_arguments(parser, MODEL, DEFAULTS)
    parser.add_argument("--tokenizer", default="pixels", choices=("pixels", "codebook", "pca"),
                        help="continuous tokens: raw 4x4 patches, the codebook's vectors, or PCA")
    parser.add_argument("--sample-steps", type=int, default=25, help="Euler steps when sampling")
    parser.add_argument("--time-dist", default="logit-normal", choices=("logit-normal", "uniform"),
                        help="how training draws t: sigmoid(0.8 n + 0.8), leaning to noise, "
                             "or U(0, 1), even over noise levels")
    args = parser.parse_args(argv)
    if args.sample_steps < 1:
        parser.error(f"--sample-steps must be a positive integer, got {args.sample_steps}")
    return parser, args


def get_config(argv=None):
    return runs.start_run(*parse(argv), MODEL)


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
    A caption (--cond text, text-partial) is read by data.py's text encoder instead."""

    def __init__(self, width, cond="continuous"):
        super().__init__()
        self.text = data.TextEncoder(width) if cond in data.TEXT_MODES else None
        if self.text is None:
            self.project = nn.ModuleList(nn.Linear(hi - lo, width)
                                         for _, lo, hi in data.COND_GROUPS)
            self.null = nn.Parameter(torch.zeros(len(data.COND_GROUPS), width))

    def forward(self, values, present):
        """values (B, 7) and present (B, 4); for a caption, word ids and present (B, L)."""
        if self.text is not None:
            return self.text(values, present)                               # (B, D)
        parts = [torch.where(present[:, g, None], project(values[:, lo:hi]), self.null[g])
                 for g, (project, (_, lo, hi)) in enumerate(zip(self.project, data.COND_GROUPS))]
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
    def __init__(self, token_dim, width=128, depth=4, heads=4, length=64, cond="continuous"):
        super().__init__()
        self.embed = nn.Linear(token_dim, width)
        self.register_buffer("positions", sincos_positions(width, int(length ** 0.5)))
        self.condition = ConditionEmbedding(width, cond)
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
    """The network a run trains, shaped by its config, and its tokenizer (data.py)."""
    tokenizer = data.ContinuousTokenizer(config["tokenizer"])
    return DiT(tokenizer.dim, config["width"], config["depth"], config["heads"],
               cond=config["cond"]), tokenizer


# ------------------------------------------------------------------------ flow matching
# Rectified flow: x_t = (1 - t) x_0 + t eps, t in [0, 1]; t = 0 is the image, t = 1 noise.
# The velocity along the path is v = dx_t/dt = eps - x_0. The network predicts x_0 (with
# 48-value tokens and width 128, predicting eps or v gave speckled samples; x_0 does not),
# and the velocity is derived from it: v_hat = (x_t - x0_hat) / t.
def noisy(x_0, t, eps):
    return (1 - t[:, None, None]) * x_0 + t[:, None, None] * eps           # q(x_t | x_0)


def draw_time(n, kind, generator):
    """Where training spends its effort. uniform: t ~ U(0, 1). logit-normal:
    t = sigmoid(0.8 n + 0.8), n ~ N(0, 1), median t = 0.69: fewer draws at the low noise levels
    25 sampling steps hardly visit."""
    if kind == "uniform":
        return torch.rand(n, generator=generator, device=generator.device)
    return torch.sigmoid(0.8 * torch.randn(n, generator=generator, device=generator.device) + 0.8)


def flow_loss(model, x_0, values, present, generator, time_dist="logit-normal"):
    t = draw_time(len(x_0), time_dist, generator)
    eps = torch.randn(x_0.shape, generator=generator, device=x_0.device)
    x_t = noisy(x_0, t, eps)
    x0_hat = model(x_t, t, values, present)
    # Velocity loss ||v_hat - v||^2 = ||x0_hat - x_0||^2 / t^2, t floored to keep it finite.
    weight = 1 / t.clamp(min=0.05) ** 2
    return (weight[:, None, None] * (x0_hat - x_0) ** 2).mean()


# ----------------------------------------------------------------------------- training
def train(config):
    device = torch.device(config["device"])
    torch.manual_seed(config["seed"])
    generator = torch.Generator(device).manual_seed(config["seed"])   # data order, t, eps, dropout
    model, tokenizer = build(config)
    model = model.to(device)
    training = data.TrainingData(config["data"], config["train_per_comp"], tokenizer.encode, device)
    ema = runs.ema_copy(model)                                         # the network evaluations use
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"], betas=config["adamw_betas"],
                                  weight_decay=config["weight_decay"])
    scaler = runs.grad_scaler(device)                                       # fp16 only: runs.py
    step = runs.resume(config, model=model, ema=ema, optimizer=optimizer, scaler=scaler,
                       rng=generator)
    evaluations = runs.evaluation_steps(config["steps"], config["eval_every"])
    metrics = None
    progress = tqdm(range(step, config["steps"]), initial=step, total=config["steps"], desc=MODEL)
    for step in progress:
        batch, latents = training.batch(config["batch_size"], generator)  # fixed or fresh images
        values, present = data.conditioning(latents, config["cond"], config["cond_drop"], generator)
        for group in optimizer.param_groups:                            # warm-up, then the schedule
            group["lr"] = runs.learning_rate(config, step)
        with runs.autocast(device):                                         # bf16 or fp16 on a GPU
            loss = flow_loss(model, batch, values, present, generator, config["time_dist"])
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)                                          # clip true gradients
        torch.nn.utils.clip_grad_norm_(model.parameters(), config["clip_norm"])
        scaler.step(optimizer)
        scaler.update()
        decay = min(config["ema_decay"], (1 + step) / (10 + step))          # EMA with warm-up
        with torch.no_grad():
            for p_ema, p in zip(ema.parameters(), model.parameters()):
                p_ema.lerp_(p, 1 - decay)
        loss = loss.item()                                      # the step's one wait for the device
        runs.check_finite(loss, step + 1, config["out"])
        progress.set_postfix(loss=f"{loss:.4f}")
        if step + 1 in evaluations:
            metrics = runs.evaluate(draw, ema, tokenizer, config, step + 1, loss,
                                    title=f"DiT ({config['cond']}, {config['tokenizer']})")
            progress.write(f"step {step + 1}: seen {100 * metrics['seen']:.1f} | level-1 "
                           f"{100 * metrics['level1']:.1f} | level-2 {100 * metrics['level2']:.1f}")
            runs.save_checkpoint(config["out"], model=model.state_dict(), ema=ema.state_dict(),
                                  optimizer=optimizer.state_dict(), scaler=scaler.state_dict(),
                                  step=step + 1, config=config, rng=generator.get_state())
    return metrics or runs.read_metrics(config["out"])[-1]


# ----------------------------------------------------------------------------- sampling
@torch.no_grad()
def sample(model, values, present, token_dim, steps, generator, length=64):
    """Euler integration of dx/dt = v from t = 1 (noise) to t = 0 (image)."""
    device = next(model.parameters()).device                # every draw is made there, by generator
    values, present = values.to(device), present.to(device)
    x = torch.randn((len(values), length, token_dim), generator=generator, device=device)
    times = torch.linspace(1, 0, steps + 1)
    for t, t_next in zip(times[:-1], times[1:]):
        t_batch = torch.full((len(x),), float(t), device=device)
        with runs.autocast(device):
            x0_hat = model(x, t_batch, values, present).float()
        velocity = (x - x0_hat) / t                                     # v_hat = (x_t - x0_hat) / t
        x = x + (t_next - t) * velocity                              # x_{t'} = x_t + (t' - t) v_hat
    return x


# --------------------------------------------------------------------------- evaluation
def draw(model, tokenizer, config, values, present, generator):
    """What an evaluation draws: images (N, H, W, 3) in [0, 1] for the conditions
    (values, present)."""
    x = sample(model, values, present, tokenizer.dim, config["sample_steps"], generator)
    return tokenizer.decode(x).clip(0, 1)


def main(argv=None):
    runs.run(MODEL, get_config(argv), train)


if __name__ == "__main__":
    main()
