"""MAR: the masked transformer of givt.py, with a small diffusion model as each token's head.

One change from GIVT: the Gaussian mixture becomes a per-token diffusion model. The
transformer's output z at a hidden position conditions a small MLP that denoises that
token (epsilon prediction, DDPM cosine schedule), so a token's distribution is whatever
the denoiser learns, not k Gaussians. Decoding commits tokens in a random order, each
sampled by running the per-token denoiser. Trained on seen compositions only.

    python mar.py                                   # the default run
    python mar.py --steps 10000 --lr-schedule cosine --out runs/mar-10k   # the long-run recipe

Sections: config -> model -> masking and the loss -> training -> sampling -> evaluation.
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

NAME = "mar"
SAMPLING = ("sample_steps", "diffusion_steps", "temperature")   # what tools/resample.py may change


# -------------------------------------------------------------------------------- config
# Every value a run uses unless a flag says otherwise; config.json records each. The first lines
# are the ladder's one recipe, the same in every generator (tests/test_ladder.py holds the copies
# together); the last are this generator's own.
DEFAULTS = dict(steps=2000, batch_size=64, lr=1e-3, lr_schedule="constant", warm_up_steps=200,
                weight_decay=0.0, ema_decay=0.999, adamw_betas=[0.9, 0.99], clip_norm=1.0,
                width=128, depth=4, heads=4, world="shapes2d", seen_count=None, data="fixed",
                train_per_comp=5000, cond="continuous", cond_drop=0.1, eval_every=250,
                samples_per_comp=32,
                # MAR's tokens, per-token diffusion and decoding (the MAR paper draws 4 (t, noise)
                # a token; 2 keeps a CPU run in budget)
                tokenizer="pixels", draws=2, time_dist="logit-normal", diffusion_steps=25,
                temperature=1.0, sample_steps=10, mask_schedule="cosine")


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
    parser.add_argument("--draws", type=int, default=DEFAULTS["draws"],
                        help="(t, noise) draws per hidden token per step")
    parser.add_argument("--time-dist", default=DEFAULTS["time_dist"],
                        choices=("logit-normal", "uniform"),
                        help="how training draws t: sigmoid(0.8 n + 0.8), leaning to noise, "
                             "or U(0, 1), even over noise levels")
    parser.add_argument("--diffusion-steps", type=int, default=DEFAULTS["diffusion_steps"],
                        help="denoising steps per token")
    parser.add_argument("--temperature", type=float, default=DEFAULTS["temperature"],
                        help="multiplies the sampler's noise")
    parser.add_argument("--sample-steps", type=int, default=DEFAULTS["sample_steps"],
                        help="parallel decoding steps")
    parser.add_argument("--mask-schedule", default=DEFAULTS["mask_schedule"],
                        choices=("cosine", "linear"),
                        help="gamma(r), the share of tokens hidden, in training and in decoding")


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
        """eps_hat (N, C), in fp32 whatever the autocast: the head trains as it samples."""
        with runs.full_precision(x_t.device):
            c = self.time(timestep_embedding(t, self.embed.out_features)) + z.float()
            h = self.embed(x_t.float())
            for block in self.blocks:
                h = block(h, c)
            shift, scale = self.final_modulation(F.silu(c)).chunk(2, -1)
            return self.out(modulate(self.final_norm(h), shift, scale))


class MAR(nn.Module):
    def __init__(self, token_dim, width=128, depth=4, heads=4, length=64,
                 cond="continuous", groups=data.COND_GROUPS):
        super().__init__()
        self.embed = nn.Linear(token_dim, width)
        self.mask_embedding = nn.Parameter(torch.zeros(width))         # stands in for hidden tokens
        self.register_buffer("positions", sincos_positions(width, int(length ** 0.5)))
        self.condition = ConditionEmbedding(width, cond, groups)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.final_norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Linear(width, 2 * width)
        self.head = nn.Linear(width, width)                                 # z for the denoiser
        self.diffusion = DiffusionHead(token_dim, width)

    def forward(self, x, hidden, values, present):
        """z (B, T, D) at every position of x (B, T, C), whose tokens are hidden where hidden
        (B, T) is True."""
        c = self.condition(values, present)                                 # (B, D)
        h = (torch.where(hidden[..., None], self.mask_embedding, self.embed(x))
             + self.positions)                                              # (B, T, D)
        for block in self.blocks:
            h = block(h, c)
        shift, scale = self.final_modulation(F.silu(c))[:, None].chunk(2, -1)
        return self.head(modulate(self.final_norm(h), shift, scale))


def build(config):
    """The network a run trains, shaped by its config, and its tokenizer (tokenizers.py)."""
    world = worlds.world(config)                                 # data.py's Shapes2D by default
    tokenizer = tokenizers.ContinuousTokenizer(config["tokenizer"], world)
    return MAR(tokenizer.dim, config["width"], config["depth"], config["heads"],
               cond=config["cond"], groups=world.COND_GROUPS), tokenizer


# ------------------------------------------------------------------------ masking and the loss
def mask_ratio(r, schedule="cosine"):
    """gamma(r): 1 (all masked) at r = 0, 0 at r = 1. cosine: cos(pi r / 2), concave, the MaskGIT
    paper's choice (training hides many tokens more often); linear: 1 - r."""
    if schedule == "linear":
        return 1 - r
    if schedule == "cosine":
        return torch.cos(math.pi / 2 * r)
    raise ValueError(f"unknown mask schedule {schedule!r}: cosine or linear")


def random_mask(batch, length, rng, schedule="cosine"):
    """(B, T) bool, True = hidden: ceil(gamma(r) T) of a row's T positions (rounded up, so never
    none), r ~ U(0, 1) drawn once per row."""
    r = torch.rand(batch, generator=rng, device=rng.device)                # on rng's device
    count = (mask_ratio(r, schedule) * length).ceil().clamp(min=1)          # (B,)
    keys = torch.rand(batch, length, generator=rng, device=rng.device)
    rank = keys.argsort(1).argsort(1)
    return rank < count[:, None]                                            # a random subset


def alpha_bar(t):
    """Cosine schedule alpha_bar(t) = f(t) / f(0), f(t) = cos^2(pi/2 (t + s) / (1 + s)), s = 0.008:
    1 at t = 0 (clean) ... floored at 1e-4 at t = 1 (all but noise)."""
    def f(u):
        return torch.cos(math.pi / 2 * (u + 0.008) / 1.008) ** 2
    return (f(t) / f(torch.zeros_like(t))).clamp(min=1e-4)


def draw_time(n, kind, rng):
    """Where training spends its effort. uniform: t ~ U(0, 1). logit-normal:
    t = sigmoid(0.8 n + 0.8), n ~ N(0, 1), median t = 0.69: fewer draws at the low noise levels
    25 sampling steps hardly visit."""
    if kind == "uniform":
        return torch.rand(n, generator=rng, device=rng.device)
    return torch.sigmoid(0.8 * torch.randn(n, generator=rng, device=rng.device) + 0.8)


def masked_loss(model, x, values, present, rng, draws=2, time_dist="logit-normal",
                schedule="cosine"):
    """Epsilon prediction ||eps_hat(x_t, t, z) - eps||^2 on the hidden tokens only."""
    hidden = random_mask(*x.shape[:2], rng, schedule)
    z = model(x, hidden, values, present)                                  # the answer is hidden
    at = hidden.nonzero(as_tuple=True)         # the step's one wait: how many are hidden (shapes)
    z, x_0 = z[at].repeat(draws, 1), x[at].repeat(draws, 1)     # (M draws, D), several a token
    t = draw_time(len(x_0), time_dist, rng)
    eps = torch.randn(x_0.shape, generator=rng, device=x.device)
    a = alpha_bar(t)[:, None]
    x_t = a.sqrt() * x_0 + (1 - a).sqrt() * eps                             # q(x_t | x_0)
    return ((model.diffusion(x_t, t, z) - eps) ** 2).float().mean()


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
            loss = masked_loss(model, batch, values, present, rng, config["draws"],
                               config["time_dist"], config["mask_schedule"])
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
def remask_count(s, steps, length, hidden, schedule="cosine"):
    """How many tokens stay hidden after decoding step s of S: gamma((s+1)/S) T, but always at
    least one fewer than are hidden now (so every step commits a token, even when the cosine
    schedule would not), none after the last step, and none once all are drawn (S > T)."""
    if s == steps - 1:
        return 0
    count = mask_ratio(torch.tensor((s + 1) / steps), schedule) * length
    return max(0, min(int(math.floor(count)), int(hidden.sum(1).min()) - 1))


@torch.no_grad()
def denoise(model, z, token_dim, steps, rng, temperature=1.0):
    """DDPM ancestral sampling of one token per row of z (N, D), from t = 1 to t = 0."""
    x = torch.randn((len(z), token_dim), generator=rng, device=z.device)
    times = torch.linspace(1, 0, steps + 1)
    for t, s in zip(times[:-1], times[1:]):
        a_t, a_s = alpha_bar(t), alpha_bar(s)
        eps_hat = model.diffusion(x, torch.full((len(x),), float(t), device=z.device), z).float()
        x0_hat = (x - (1 - a_t).sqrt() * eps_hat) / a_t.sqrt()
        beta = 1 - a_t / a_s
        # posterior q(x_s | x_t, x0_hat): mean and variance of the DDPM step
        mean = (a_s.sqrt() * beta * x0_hat + (a_t / a_s).sqrt() * (1 - a_s) * x) / (1 - a_t)
        variance = beta * (1 - a_s) / (1 - a_t)                             # 0 at the last step
        noise = torch.randn(x.shape, generator=rng, device=z.device)
        x = mean + temperature * variance.sqrt() * noise
    return x


@torch.no_grad()
def sample(model, values, present, token_dim, steps, rng, diffusion_steps=25, temperature=1.0,
           length=64, schedule="cosine"):
    """Random-order decoding: start all hidden; at step s pick the hidden tokens to commit
    (all but gamma((s+1)/S) T of them), sample just those with the denoiser, and go on."""
    device = next(model.parameters()).device                      # every draw is made there, by rng
    values, present = values.to(device), present.to(device)
    tokens = torch.zeros((len(values), length, token_dim), device=device)
    hidden = torch.ones((len(values), length), dtype=torch.bool, device=device)
    for s in range(steps):
        with runs.autocast(device):
            z = model(tokens, hidden, values, present).float()
        remask = remask_count(s, steps, length, hidden, schedule)
        order = torch.rand(hidden.shape, generator=rng, device=device)
        order = order.masked_fill(~hidden, math.inf)                        # hidden ones first
        still_hidden = torch.zeros_like(hidden).scatter(1, order.argsort(1)[:, :remask], True)
        commit = hidden & ~still_hidden                                  # (B, T) this step's tokens
        tokens[commit] = denoise(model, z[commit], token_dim, diffusion_steps, rng, temperature)
        hidden = still_hidden
    return tokens


# --------------------------------------------------------------------------- evaluation
def draw(model, tokenizer, config, values, present, rng):
    """What an evaluation draws: images (N, H, W, 3) in [0, 1] for the conditions
    (values, present)."""
    tokens = sample(model, values, present, tokenizer.dim, config["sample_steps"], rng,
                    config["diffusion_steps"], config["temperature"],
                    schedule=config["mask_schedule"])
    return tokenizer.decode(tokens).clip(0, 1)


def main(argv=None):
    runs.run(NAME, get_config(argv), train)


if __name__ == "__main__":
    main()
