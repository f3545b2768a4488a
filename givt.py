"""GIVT: the masked transformer of maskgit.py over continuous tokens, with a Gaussian mixture.

One change from MaskGIT: the tokens are continuous (4x4 pixel patches, 48 values each;
no codebook), and the categorical head becomes a mixture of k diagonal Gaussians per
token, trained by negative log-likelihood on the masked positions. Sampling decodes in
the same parallel schedule, committing tokens by their density. Trained on seen
compositions only.

    python givt.py                                  # the default run
    python givt.py --unmask confidence --out runs/givt-confidence

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

NAME = "givt"
SAMPLING = ("sample_steps", "unmask", "temperature", "mixture_temperature",
            "choice_temperature")                             # what tools/resample.py may change
SCALE_FLOOR = 0.01     # sigma >= 0.01: the flat background cannot drive the likelihood to infinity


# -------------------------------------------------------------------------------- config
# Every value a run uses unless a flag says otherwise; config.json records each. The first lines
# are the ladder's one recipe, the same in every generator (tests/test_ladder.py holds the copies
# together); the last are this generator's own.
DEFAULTS = dict(steps=2000, batch_size=64, lr=1e-3, lr_schedule="constant", warm_up_steps=200,
                weight_decay=0.0, ema_decay=0.999, adamw_betas=[0.9, 0.99], clip_norm=1.0,
                width=128, depth=4, heads=4, world="shapes2d", seen_count=None, data="fixed",
                train_per_comp=5000, cond="continuous", cond_drop=0.1, eval_every=250,
                samples_per_comp=32,
                # GIVT's tokens, mixture, decoding (random order: by density, background first)
                tokenizer="pixels", components=8, temperature=1.0, mixture_temperature=1.0,
                sample_steps=10, mask_schedule="cosine", choice_temperature=4.5,
                unmask="random")


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
    parser.add_argument("--components", type=int, default=DEFAULTS["components"],
                        help="Gaussians in each token's mixture")
    parser.add_argument("--temperature", type=float, default=DEFAULTS["temperature"],
                        help="multiplies the sampled scales")
    parser.add_argument("--mixture-temperature", type=float,
                        default=DEFAULTS["mixture_temperature"],
                        help="tau: a token's component is drawn with probability ~ pi^(1/tau); 0 "
                             "takes the likeliest")
    parser.add_argument("--sample-steps", type=int, default=DEFAULTS["sample_steps"],
                        help="parallel decoding steps")
    parser.add_argument("--mask-schedule", default=DEFAULTS["mask_schedule"],
                        choices=("cosine", "linear"),
                        help="gamma(r), the share of tokens hidden, in training and in decoding")
    parser.add_argument("--unmask", default=DEFAULTS["unmask"], choices=("confidence", "random"),
                        help="which masked tokens to commit at each decoding step")
    parser.add_argument("--choice-temperature", type=float, default=DEFAULTS["choice_temperature"],
                        help="Gumbel noise on the confidence, annealed to 0 over decoding")


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


class GIVT(nn.Module):
    def __init__(self, token_dim, components=8, width=128, depth=4, heads=4, length=64,
                 cond="continuous", groups=data.COND_GROUPS):
        super().__init__()
        self.token_dim, self.components = token_dim, components
        self.embed = nn.Linear(token_dim, width)
        self.mask_embedding = nn.Parameter(torch.zeros(width))         # stands in for hidden tokens
        self.register_buffer("positions", sincos_positions(width, int(length ** 0.5)))
        self.condition = ConditionEmbedding(width, cond, groups)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.final_norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Linear(width, 2 * width)
        self.head = nn.Linear(width, components * (1 + 2 * token_dim))     # weights, means, scales
        for layer in (self.final_modulation, self.head):  # adaLN-Zero: one mixture at first
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)
        with torch.no_grad():  # distinct starting means: identical components would stay identical
            self.head.bias[components:components * (1 + token_dim)].normal_(0, 0.5)

    def forward(self, x, hidden, values, present):
        """The mixture at every position of x (B, T, C), whose tokens are hidden where hidden
        (B, T) is True: log weights (B, T, K), means and scales (B, T, K, C)."""
        c = self.condition(values, present)                                 # (B, D)
        h = (torch.where(hidden[..., None], self.mask_embedding, self.embed(x))
             + self.positions)                                              # (B, T, D)
        for block in self.blocks:
            h = block(h, c)
        with runs.full_precision(h.device):                                 # the head: no bf16
            shift, scale = self.final_modulation(F.silu(c.float()))[:, None].chunk(2, -1)
            out = self.head(modulate(self.final_norm(h.float()), shift, scale))
        k, dims = self.components, self.components * self.token_dim
        logits, means, scales = out.split([k, dims, dims], -1)
        means = means.unflatten(-1, (k, self.token_dim))                    # (B, T, K, C)
        scales = F.softplus(scales.unflatten(-1, (k, self.token_dim))) + SCALE_FLOOR
        return logits.log_softmax(-1), means, scales


def build(config):
    """The network a run trains, shaped by its config, and its tokenizer (tokenizers.py)."""
    world = worlds.world(config)                                 # data.py's Shapes2D by default
    tokenizer = tokenizers.ContinuousTokenizer(config["tokenizer"], world)
    return GIVT(tokenizer.dim, config["components"], config["width"], config["depth"],
                config["heads"], cond=config["cond"], groups=world.COND_GROUPS), tokenizer


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


def log_density(x, log_weights, means, scales):
    """log p(x) = logsumexp_k [ log pi_k + sum_d log N(x_d; mu_kd, sigma_kd^2) ], x (..., C)."""
    z = (x[..., None, :] - means) / scales                                  # (..., K, C)
    log_normal = (-0.5 * z ** 2 - scales.log() - 0.5 * math.log(2 * math.pi)).sum(-1)
    return torch.logsumexp(log_weights + log_normal, -1)                    # (...,)


def masked_loss(model, x, values, present, rng, schedule="cosine"):
    """Negative log-likelihood of the hidden tokens, in nats per token value."""
    hidden = random_mask(*x.shape[:2], rng, schedule)
    log_weights, means, scales = model(x, hidden, values, present)         # the answer is hidden
    at = hidden.nonzero(as_tuple=True)         # the step's one wait: how many are hidden (shapes)
    nll = -log_density(x[at].float(), log_weights[at].float(), means[at].float(),
                       scales[at].float())
    return nll.mean() / x.shape[-1]


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
            loss = masked_loss(model, batch, values, present, rng, config["mask_schedule"])
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


def choose_component(log_weights, tau, rng):
    """k ~ softmax(log pi / tau) per token, by Gumbel-max: tau = 1 draws from the mixture's own
    weights pi, tau = 0 takes each token's most likely component."""
    # u is drawn even for tau = 0, so that every draw after it stays the same
    u = torch.rand(log_weights.shape, generator=rng, device=log_weights.device)
    if tau == 0:
        return log_weights.argmax(-1)
    return (log_weights / tau - torch.log(-torch.log(u.clamp(1e-20)))).argmax(-1)


@torch.no_grad()
def sample(model, values, present, token_dim, steps, rng, unmask="random",
           choice_temperature=4.5, temperature=1.0, length=64, schedule="cosine",
           mixture_temperature=1.0):
    """Parallel decoding: start all hidden; at step s draw every hidden token from the head, keep
    some (the most confident, or a random choice: unmask) and hide gamma((s+1)/S) T of them
    again, so none is left after S steps."""
    device = next(model.parameters()).device                      # every draw is made there, by rng
    values, present = values.to(device), present.to(device)
    tokens = torch.zeros((len(values), length, token_dim), device=device)
    hidden = torch.ones((len(values), length), dtype=torch.bool, device=device)
    for s in range(steps):
        with runs.autocast(device):
            log_weights, means, scales = model(tokens, hidden, values, present)   # fp32: the head
        k = choose_component(log_weights, mixture_temperature, rng)        # (B, T)
        pick = k[..., None, None].expand(-1, -1, 1, token_dim)
        mu, sigma = means.gather(2, pick)[:, :, 0], scales.gather(2, pick)[:, :, 0]
        drawn = mu + temperature * sigma * torch.randn(mu.shape, generator=rng, device=device)
        log_p = log_density(drawn, log_weights, means, scales)
        if unmask == "confidence":                                          # log p + annealed noise
            u = torch.rand(hidden.shape, generator=rng, device=device)
            g = -torch.log(-torch.log(u.clamp(1e-20)))                      # Gumbel noise
            confidence = log_p + choice_temperature * (1 - (s + 1) / steps) * g
        else:                                                               # a random order
            confidence = torch.rand(hidden.shape, generator=rng, device=device)
        confidence = confidence.masked_fill(~hidden, math.inf)              # decoded tokens stay
        remask = remask_count(s, steps, length, hidden, schedule)
        tokens = torch.where(hidden[..., None], drawn, tokens)
        hidden = torch.zeros_like(hidden)
        if remask > 0:
            lowest = confidence.argsort(1)[:, :remask]                      # least confident
            hidden = hidden.scatter(1, lowest, True)
    return tokens


# --------------------------------------------------------------------------- evaluation
def draw(model, tokenizer, config, values, present, rng):
    """What an evaluation draws: images (N, H, W, 3) in [0, 1] for the conditions
    (values, present)."""
    tokens = sample(model, values, present, tokenizer.dim, config["sample_steps"], rng,
                    config["unmask"], config["choice_temperature"], config["temperature"],
                    schedule=config["mask_schedule"],
                    mixture_temperature=config["mixture_temperature"])
    return tokenizer.decode(tokens).clip(0, 1)


def main(argv=None):
    runs.run(NAME, get_config(argv), train)


if __name__ == "__main__":
    main()
