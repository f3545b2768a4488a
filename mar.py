"""MAR: the masked transformer of givt.py, with a small diffusion model as each token's head.

One change from GIVT: the Gaussian mixture becomes a per-token diffusion model. The
transformer's output z at a hidden position conditions a small MLP that denoises that
token (epsilon prediction, DDPM cosine schedule), so a token's distribution is whatever
the denoiser learns, not k Gaussians. Decoding commits tokens in a random order, each
sampled by running the per-token denoiser. Trained on seen compositions only.

    python mar.py                                   # default: 17 minutes alone on a 2-core CPU
    python mar.py --steps 8000 --lr-schedule cosine --out runs/mar-8k

Sections: config -> model -> masking and per-token diffusion -> training -> sampling -> evaluation.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

import data
import runs

MODEL = "mar"
SAMPLING = ("sample_steps", "diffusion_steps", "temperature")   # what tools/resample.py may change


# -------------------------------------------------------------------------------- config
def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    runs.add_common_arguments(parser, steps=2000, eval_every=250, model=MODEL, lr=1e-3)
    parser.add_argument("--tokenizer", default="pixels", choices=("pixels", "codebook", "pca"),
                        help="continuous tokens: raw 4x4 patches, the codebook's vectors, or PCA")
    parser.add_argument("--width", type=int, default=128)   # the ladder's backbone:
    parser.add_argument("--depth", type=int, default=4)     # the same in every generator
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--sample-steps", type=int, default=10, help="parallel decoding steps")
    parser.add_argument("--mask-schedule", default="cosine", choices=("cosine", "linear"),
                        help="gamma(r), the share of tokens hidden, in training and in decoding")
    parser.add_argument("--diffusion-steps", type=int, default=25, help="denoising steps per token")
    parser.add_argument("--draws", type=int, default=2,
                        help="(t, noise) draws per hidden token per step (the MAR paper: 4; 2 keeps a CPU run in budget)")
    parser.add_argument("--temperature", type=float, default=1.0, help="multiplies the sampler's noise")
    parser.add_argument("--time-dist", default="logit-normal", choices=("logit-normal", "uniform"),
                        help="how training draws t: sigmoid(0.8 n + 0.8), leaning to noise, or U(0, 1), "
                             "slower to compose (results/README.md, the recipe)")
    args = parser.parse_args(argv)
    for name in ("sample_steps", "diffusion_steps", "draws"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}")
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
            self.project = nn.ModuleList(nn.Linear(hi - lo, width) for _, lo, hi in data.COND_GROUPS)
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

    def forward(self, x, c, mask=None):                                      # x (B, T, D), c (B, D)
        """mask (T, T), True where a position may not look (ar.py's causal order); None: all see all."""
        shift1, scale1, gate1, shift2, scale2, gate2 = self.modulation(F.silu(c))[:, None].chunk(6, -1)
        h = modulate(self.norm1(x), shift1, scale1)
        x = x + gate1 * self.attention(h, h, h, attn_mask=mask, need_weights=False)[0]
        h = modulate(self.norm2(x), shift2, scale2)
        return x + gate2 * self.mlp(h)


def timestep_embedding(t, width):
    """Sinusoidal features of the diffusion time t (B,) -> (B, width)."""
    half = width // 2
    frequency = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / half)
    angles = 1000 * t[:, None] * frequency                                  # (B, D/2)
    return torch.cat([angles.sin(), angles.cos()], 1)


class ResidualBlock(nn.Module):
    """MLP block of the denoiser, with adaLN-Zero from (z + time)."""

    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width))
        self.modulation = nn.Linear(width, 3 * width)
        nn.init.zeros_(self.modulation.weight)
        nn.init.zeros_(self.modulation.bias)

    def forward(self, h, c):                                                # h, c (N, D)
        shift, scale, gate = self.modulation(F.silu(c)).chunk(3, -1)
        return h + gate * self.mlp(modulate(self.norm(h), shift, scale))


class DiffusionHead(nn.Module):
    """Predicts the noise eps in one noisy token x_t (N, C), given t (N,) and its z (N, D)."""

    def __init__(self, token_dim, width, depth=3):
        super().__init__()
        self.embed = nn.Linear(token_dim, width)
        self.time = nn.Sequential(nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width))
        self.blocks = nn.ModuleList(ResidualBlock(width) for _ in range(depth))
        self.final_norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Linear(width, 2 * width)
        self.out = nn.Linear(width, token_dim)
        for layer in (self.final_modulation, self.out):   # adaLN-Zero: eps_hat starts at 0
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, x_t, t, z):
        c = self.time(timestep_embedding(t, self.embed.out_features)) + z
        h = self.embed(x_t)
        for block in self.blocks:
            h = block(h, c)
        shift, scale = self.final_modulation(F.silu(c)).chunk(2, -1)
        return self.out(modulate(self.final_norm(h), shift, scale))


class MAR(nn.Module):
    def __init__(self, token_dim, width=128, depth=4, heads=4, length=64, cond="continuous"):
        super().__init__()
        self.embed = nn.Linear(token_dim, width)
        self.mask_embedding = nn.Parameter(torch.zeros(width))             # stands in for hidden tokens
        self.register_buffer("positions", sincos_positions(width, int(length ** 0.5)))
        self.condition = ConditionEmbedding(width, cond)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.final_norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Linear(width, 2 * width)
        self.head = nn.Linear(width, width)                                 # z for the denoiser
        self.diffusion = DiffusionHead(token_dim, width)

    def forward(self, x, mask, values, present):
        """z (B, T, D) at every position of x (B, T, C), hidden where mask (B, T) is True."""
        c = self.condition(values, present)                                 # (B, D)
        h = torch.where(mask[..., None], self.mask_embedding, self.embed(x)) + self.positions  # (B, T, D)
        for block in self.blocks:
            h = block(h, c)
        shift, scale = self.final_modulation(F.silu(c))[:, None].chunk(2, -1)
        return self.head(modulate(self.final_norm(h), shift, scale))



def build(config):
    """The network a run trains, shaped by its config, and its tokenizer (data.py)."""
    tokenizer = data.ContinuousTokenizer(config["tokenizer"])
    return MAR(tokenizer.dim, config["width"], config["depth"], config["heads"],
               cond=config["cond"]), tokenizer

# ------------------------------------------------------------ masking and per-token diffusion


def mask_ratio(r, schedule="cosine"):
    """gamma(r): 1 (all masked) at r = 0, 0 at r = 1. cosine: cos(pi r / 2), concave, the MaskGIT
    paper's choice (training hides many tokens more often); linear: 1 - r."""
    if schedule == "linear":
        return 1 - r
    if schedule == "cosine":
        return torch.cos(math.pi / 2 * r)
    raise ValueError(f"unknown mask schedule {schedule!r}: cosine or linear")


def random_mask(batch, length, generator, schedule="cosine"):
    """(B, T) bool, True = hidden: gamma(r) T positions, r ~ U(0, 1), at least one."""
    r = torch.rand(batch, generator=generator)
    count = (mask_ratio(r, schedule) * length).ceil().clamp(min=1)          # (B,)
    rank = torch.rand(batch, length, generator=generator).argsort(1).argsort(1)
    return rank < count[:, None]                                            # a random subset


def alpha_bar(t):
    """Cosine schedule alpha_bar(t) = f(t) / f(0), f(t) = cos^2(pi/2 (t + s) / (1 + s)), s = 0.008:
    1 at t = 0 (clean) ... floored at 1e-4 at t = 1 (all but noise)."""
    f = lambda u: torch.cos(math.pi / 2 * (u + 0.008) / 1.008) ** 2
    return (f(t) / f(torch.zeros_like(t))).clamp(min=1e-4)


def draw_time(n, kind, generator):
    """Where training spends its effort. uniform: t ~ U(0, 1). logit-normal: t = sigmoid(0.8 n + 0.8),
    n ~ N(0, 1), median t = 0.69: fewer draws at the low noise levels 25 sampling steps hardly visit."""
    if kind == "uniform":
        return torch.rand(n, generator=generator)
    return torch.sigmoid(0.8 * torch.randn(n, generator=generator) + 0.8)


def masked_loss(model, x, values, present, generator, draws=2, time_dist="logit-normal", schedule="cosine"):
    """Epsilon prediction ||eps_hat(x_t, t, z) - eps||^2 on the hidden tokens only."""
    mask = random_mask(*x.shape[:2], generator, schedule).to(x.device)
    z = model(x, mask, values, present)[mask].repeat(draws, 1)              # (M * draws, D)
    x_0 = x[mask].repeat(draws, 1)                                          # several draws a token
    t = draw_time(len(x_0), time_dist, generator).to(x.device)
    eps = torch.randn(x_0.shape, generator=generator).to(x.device)
    a = alpha_bar(t)[:, None]
    x_t = a.sqrt() * x_0 + (1 - a).sqrt() * eps                             # q(x_t | x_0)
    return ((model.diffusion(x_t, t, z) - eps) ** 2).float().mean()


# ----------------------------------------------------------------------------- training
def train(config):
    device = torch.device(config["device"])
    torch.manual_seed(config["seed"])
    generator = torch.Generator().manual_seed(config["seed"])             # data order, masks, dropout
    model, tokenizer = build(config)
    model = model.to(device)
    training = data.TrainingData(config["data"], config["train_per_comp"], tokenizer.encode)
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
        batch, latents = training.batch(config["batch_size"], generator)  # fixed or fresh images
        values, present = data.conditioning(latents, config["cond"], config["cond_drop"], generator)
        for group in optimizer.param_groups:                                # warm-up, then the schedule
            group["lr"] = runs.learning_rate(config, step)
        with torch.autocast(device.type, torch.bfloat16, enabled=device.type == "cuda"):
            loss = masked_loss(model, batch.to(device), values.to(device), present.to(device), generator,
                               config["draws"], config["time_dist"], config["mask_schedule"])
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
            metrics = runs.evaluate(draw, ema, tokenizer, config, step + 1, loss.item(),
                                    title=f"MAR ({config['cond']}, {config['tokenizer']})")
            progress.write(f"step {step + 1}: seen {100 * metrics['seen']:.1f} | level-1 "
                           f"{100 * metrics['level1']:.1f} | level-2 {100 * metrics['level2']:.1f}")
            runs.save_checkpoint(config["out"], model=model.state_dict(), ema=ema.state_dict(),
                                  optimizer=optimizer.state_dict(), step=step + 1, config=config,
                                  rng=generator.get_state())
    return metrics or runs.read_metrics(config["out"])[-1]


# ----------------------------------------------------------------------------- sampling
def remask_count(s, steps, length, masked, schedule="cosine"):
    """How many tokens stay hidden after decoding step s of S: gamma((s+1)/S) T, but always at
    least one fewer than are hidden now (so every step commits a token, even when the cosine
    schedule would not), none after the last step, and none once all are drawn (S > T)."""
    if s == steps - 1:
        return 0
    hidden = mask_ratio(torch.tensor((s + 1) / steps), schedule) * length
    return max(0, min(int(math.floor(hidden)), int(masked.sum(1).min()) - 1))


@torch.no_grad()
def denoise(model, z, token_dim, steps, generator, temperature=1.0):
    """DDPM ancestral sampling of one token per row of z (N, D), from t = 1 to t = 0."""
    x = torch.randn((len(z), token_dim), generator=generator).to(z.device)
    times = torch.linspace(1, 0, steps + 1)
    for t, s in zip(times[:-1], times[1:]):
        a_t, a_s = alpha_bar(t), alpha_bar(s)
        eps_hat = model.diffusion(x, torch.full((len(x),), float(t), device=z.device), z).float()
        x0_hat = (x - (1 - a_t).sqrt() * eps_hat) / a_t.sqrt()
        beta = 1 - a_t / a_s
        # posterior q(x_s | x_t, x0_hat): mean and variance of the DDPM step
        mean = (a_s.sqrt() * beta * x0_hat + (a_t / a_s).sqrt() * (1 - a_s) * x) / (1 - a_t)
        variance = beta * (1 - a_s) / (1 - a_t)                             # 0 at the last step
        x = mean + temperature * variance.sqrt() * torch.randn(x.shape, generator=generator).to(z.device)
    return x


@torch.no_grad()
def sample(model, values, present, token_dim, steps, generator, diffusion_steps=25, temperature=1.0, length=64,
           schedule="cosine"):
    """Random-order decoding: start all hidden; at step s pick the hidden tokens to commit
    (all but gamma((s+1)/S) T of them), sample just those with the denoiser, and go on."""
    device = next(model.parameters()).device
    x = torch.zeros((len(values), length, token_dim), device=device)
    masked = torch.ones((len(values), length), dtype=torch.bool, device=device)
    for s in range(steps):
        with torch.autocast(device.type, torch.bfloat16, enabled=device.type == "cuda"):
            z = model(x, masked, values.to(device), present.to(device)).float()
        remask = remask_count(s, steps, length, masked, schedule)
        order = torch.rand(masked.shape, generator=generator).to(device).masked_fill(~masked, math.inf)
        still_masked = torch.zeros_like(masked).scatter(1, order.argsort(1)[:, :remask], True)
        commit = masked & ~still_masked                                     # (B, T) this step's tokens
        x[commit] = denoise(model, z[commit], token_dim, diffusion_steps, generator, temperature)
        masked = still_masked
    return x


# --------------------------------------------------------------------------- evaluation
def draw(model, tokenizer, config, values, present, generator):
    """What an evaluation draws: images (N, H, W, 3) in [0, 1] for the conditions (values, present)."""
    x = sample(model, values, present, tokenizer.dim, config["sample_steps"], generator, config["diffusion_steps"],
               config["temperature"], schedule=config["mask_schedule"])
    return tokenizer.decode(x).clip(0, 1)


def main(argv=None):
    runs.run(MODEL, get_config(argv), train)


if __name__ == "__main__":
    main()
