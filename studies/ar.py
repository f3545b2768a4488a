"""AR: a causal autoregressive transformer, the paper's second test of its first claim (Table 2).

The ladder's backbone in raster order: the 64 tokens of an image are generated one at a
time, left to right and top to bottom, each from all before it. The condition is the start
token and, as in every generator, adaLN-Zero in every block. The objective is the flag:

    --head categorical   next-token cross-entropy over codebook ids (maskgit.py's tokens and loss)
    --head gmm           next-token Gaussian-mixture likelihood over continuous tokens (givt.py's
                         head), by default the pixel patches GIVT reads; --tokenizer codebook
                         gives it the very codes the categorical head predicts, as vectors

Training is teacher forcing: slot i sees the true tokens 0..i-1 and predicts token i, all
64 slots at once behind a causal mask. Sampling draws the tokens in 64 steps, with a
temperature. Trained on seen compositions only.

    python studies/ar.py                                    # the categorical head
    python studies/ar.py --head gmm --out runs/ar-gmm       # the mixture head

Sections: config -> model -> the causal order and the two likelihoods -> training -> sampling
-> evaluation.
"""
import argparse
import copy
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the top
import captions
import data
import runs
import tokenizers
import worlds

NAME = "ar"
SAMPLING = ("temperature",)     # what tools/resample.py may change


# -------------------------------------------------------------------------------- config
# Every value a run uses unless a flag says otherwise; config.json records each. The first lines
# are the ladder's one recipe, the same in every generator (tests/test_ladder.py holds the copies
# together); the last are this generator's own.
DEFAULTS = dict(steps=2000, batch_size=64, lr=1e-3, lr_schedule="constant", warm_up_steps=200,
                weight_decay=0.0, ema_decay=0.999, adamw_betas=[0.9, 0.99], clip_norm=1.0,
                width=128, depth=4, heads=4, world="shapes2d", seen_count=None, data="fixed",
                train_per_comp=5000, cond="continuous", cond_drop=0.1, eval_every=250,
                samples_per_comp=32,
                # AR's head, its tokens (None: the head's, codebook ids or pixels) and sampler
                head="categorical", tokenizer=None, components=8, temperature=1.0)


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=runs.Help)
    runs.add_common_arguments(parser, NAME, DEFAULTS)
    parser.add_argument("--head", default=DEFAULTS["head"], choices=("categorical", "gmm"),
                        help="the objective: cross-entropy over codebook ids, or a Gaussian "
                             "mixture over vectors")
    parser.add_argument("--tokenizer", default=DEFAULTS["tokenizer"],
                        choices=("pixels", "codebook", "pca"),
                        help="the mixture head's continuous tokens (default pixels); the "
                             "categorical head reads codebook ids")
    parser.add_argument("--components", type=int, default=DEFAULTS["components"],
                        help="Gaussians in each token's mixture (gmm)")
    parser.add_argument("--temperature", type=float, default=DEFAULTS["temperature"],
                        help="divides the logits (categorical) or multiplies the sampled scales "
                             "(gmm); 0: greedy")
    args = runs.parse_args(parser, argv)
    if args.head == "categorical" and args.tokenizer not in (None, "codebook"):
        parser.error(f"--tokenizer {args.tokenizer}: the categorical head predicts codebook ids; "
                     "a tokenizer is chosen only with --head gmm")
    args.tokenizer = args.tokenizer or ("codebook" if args.head == "categorical" else "pixels")
    return parser, args


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


SCALE_FLOOR = 0.01     # sigma >= 0.01: the flat background cannot drive the likelihood to infinity


class AR(nn.Module):
    """Slot i holds token i-1 (slot 0 the start token, the condition itself) and the position of
    token i, and predicts token i: logits over the codebook, or a mixture of k Gaussians."""

    def __init__(self, head, token_dim, vocab_size=None, components=8, width=128, depth=4, heads=4,
                 length=64, cond="continuous", groups=data.COND_GROUPS):
        super().__init__()
        self.categorical = head == "categorical"
        self.token_dim, self.components = token_dim, components
        self.embed = (nn.Embedding(vocab_size, width) if self.categorical
                      else nn.Linear(token_dim, width))
        self.register_buffer("positions", sincos_positions(width, int(length ** 0.5)))
        # causal[i, j] is True where token j comes later than token i: slot i may not look there
        self.register_buffer("causal", torch.ones(length, length, dtype=torch.bool).triu(1))
        self.condition = ConditionEmbedding(width, cond, groups)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.final_norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Linear(width, 2 * width)
        outputs = vocab_size if self.categorical else components * (1 + 2 * token_dim)
        self.head = nn.Linear(width, outputs)
        # adaLN-Zero: uniform logits, one mixture at first
        for layer in (self.final_modulation, self.head):
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)
        if not self.categorical:
            # distinct starting means: identical components would stay identical
            with torch.no_grad():
                self.head.bias[components:components * (1 + token_dim)].normal_(0, 0.5)

    def forward(self, prefix, values, present):
        """The prediction for tokens 0..L from prefix = tokens 0..L-1, ids (B, L) or vectors
        (B, L, C): logits (B, L+1, V), or log weights (B, L+1, K), means and scales
        (B, L+1, K, C)."""
        c = self.condition(values, present)                                 # (B, D)
        h = torch.cat([c[:, None], self.embed(prefix)], 1)              # (B, L+1, D): start, tokens
        length = h.shape[1]
        h = h + self.positions[:length]
        for block in self.blocks:
            h = block(h, c, self.causal[:length, :length])
        with runs.full_precision(h.device):                 # logits or the mixture: no bf16
            shift, scale = self.final_modulation(F.silu(c.float()))[:, None].chunk(2, -1)
            out = self.head(modulate(self.final_norm(h.float()), shift, scale))
        if self.categorical:
            return out
        k, dims = self.components, self.components * self.token_dim
        logits, means, scales = out.split([k, dims, dims], -1)
        means = means.unflatten(-1, (k, self.token_dim))                    # (B, L+1, K, C)
        scales = F.softplus(scales.unflatten(-1, (k, self.token_dim))) + SCALE_FLOOR
        return logits.log_softmax(-1), means, scales


def build(config):
    """The network a run trains, shaped by its config, and its tokenizer (tokenizers.py): the
    codebook's ids for the categorical head, continuous tokens for the mixture."""
    world = worlds.world(config)                                 # data.py's Shapes2D by default
    shape = dict(components=config["components"], width=config["width"], depth=config["depth"],
                 heads=config["heads"], cond=config["cond"], groups=world.COND_GROUPS)
    if config["head"] == "categorical":
        codebook = tokenizers.load_tokenizer("codebook", world)
        return AR("categorical", None, codebook.vocab_size, **shape), codebook
    tokenizer = tokenizers.ContinuousTokenizer(config["tokenizer"], world)
    return AR("gmm", tokenizer.dim, **shape), tokenizer


# ---------------------------------------------------- the causal order and the two likelihoods
def log_density(x, log_weights, means, scales):
    """log p(x) = logsumexp_k [ log pi_k + sum_d log N(x_d; mu_kd, sigma_kd^2) ], x (..., C)."""
    z = (x[..., None, :] - means) / scales                                  # (..., K, C)
    log_normal = (-0.5 * z ** 2 - scales.log() - 0.5 * math.log(2 * math.pi)).sum(-1)
    return torch.logsumexp(log_weights + log_normal, -1)                    # (...,)


def next_token_loss(model, x, values, present):
    """Teacher forcing: -log p(x_i | x_<i, c) for every i at once (one forward pass, causal mask).
    categorical: cross-entropy over the codebook; gmm: the mixture's NLL in nats per token value."""
    out = model(x[:, :-1], values, present)                                 # slots 0..63 see x_<i
    if model.categorical:
        return F.cross_entropy(out.flatten(0, 1).float(), x.flatten())
    log_weights, means, scales = (p.float() for p in out)
    return -log_density(x.float(), log_weights, means, scales).mean() / x.shape[-1]


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
            loss = next_token_loss(model, batch, values, present)
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
def choose_component(log_weights, tau, rng):
    """k ~ softmax(log pi / tau) per token, by Gumbel-max: tau = 1 draws from the mixture's own
    weights pi, tau = 0 takes each token's most likely component."""
    # u is drawn even for tau = 0, so that every draw after it stays the same
    u = torch.rand(log_weights.shape, generator=rng, device=log_weights.device)
    if tau == 0:
        return log_weights.argmax(-1)
    return (log_weights / tau - torch.log(-torch.log(u.clamp(1e-20)))).argmax(-1)


@torch.no_grad()
def sample(model, values, present, rng, temperature=1.0, length=64):
    """Raster order: 64 steps, each draws token i from p(x_i | x_<i, c) and appends it."""
    device = next(model.parameters()).device                      # every draw is made there, by rng
    values, present = values.to(device), present.to(device)
    prefix = (torch.zeros((len(values), 0), dtype=torch.long, device=device) if model.categorical
              else torch.zeros((len(values), 0, model.token_dim), device=device))
    for _ in range(length):
        with runs.autocast(device):
            out = model(prefix, values, present)
        if model.categorical:
            logits = out[:, -1].float()                                     # (B, V): the next token
            u = torch.rand(logits.shape, generator=rng, device=device)    # even when greedy
            gumbel = -torch.log(-torch.log(u.clamp(1e-20)))
            token = (logits.argmax(-1) if temperature == 0
                     else (logits / temperature + gumbel).argmax(-1))
        else:
            log_weights, means, scales = (p[:, -1].float() for p in out)   # (B, K), (B, K, C)
            k = choose_component(log_weights, 1.0, rng)                      # (B,)
            pick = k[:, None, None].expand(-1, 1, model.token_dim)
            mu, sigma = means.gather(1, pick)[:, 0], scales.gather(1, pick)[:, 0]  # (B, C)
            noise = torch.randn(mu.shape, generator=rng, device=device)
            token = mu + temperature * sigma * noise
        prefix = torch.cat([prefix, token[:, None]], 1)
    return prefix


# --------------------------------------------------------------------------- evaluation
def draw(model, tokenizer, config, values, present, rng):
    """What an evaluation draws: images (N, H, W, 3) in [0, 1] for the conditions
    (values, present)."""
    tokens = sample(model, values, present, rng, config["temperature"])
    return np.asarray(tokenizer.decode(tokens)).clip(0, 1)


def main(argv=None):
    runs.run(NAME, get_config(argv), train)


if __name__ == "__main__":
    main()
