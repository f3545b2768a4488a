"""MaskGIT: a masked transformer over discrete tokens, the categorical end of the ladder.

Each image is 64 codebook ids (tokenizers.Codebook: 4x4 patches, 2048 codes). Training hides a
random fraction of the ids behind [MASK] and asks for a categorical distribution over the
codebook at each hidden position (cross-entropy). Sampling starts from all [MASK] and
commits the most confident ids over a few parallel steps. The condition enters through
adaLN-Zero, the same mechanism as in dit.py. Trained on seen compositions only.

    python maskgit.py                                       # the default run
    python maskgit.py --unmask random --out runs/maskgit-random

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

NAME = "maskgit"
SAMPLING = ("sample_steps", "unmask",
            "choice_temperature")                             # what tools/resample.py may change


# -------------------------------------------------------------------------------- config
# Every value a run uses unless a flag says otherwise; config.json records each. The first lines
# are the ladder's one recipe, the same in every generator (tests/test_ladder.py holds the copies
# together); the last are this generator's own.
DEFAULTS = dict(steps=2000, batch_size=64, lr=1e-3, lr_schedule="constant", warm_up_steps=200,
                weight_decay=0.0, ema_decay=0.999, adamw_betas=[0.9, 0.99], clip_norm=1.0,
                width=128, depth=4, heads=4, world="shapes2d", seen_count=None, data="fixed",
                train_per_comp=5000, cond="continuous", cond_drop=0.1, eval_every=250,
                samples_per_comp=32,
                # MaskGIT's decoding, as its paper: the most confident ids first
                sample_steps=10, mask_schedule="cosine", choice_temperature=4.5,
                unmask="confidence")


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=runs.Help)
    runs.add_common_arguments(parser, NAME, DEFAULTS)
    add_arguments(parser)
    return parser, runs.parse_args(parser, argv)


def add_arguments(parser):
    """The generator's own flags, each at its DEFAULTS value."""
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


class MaskGIT(nn.Module):
    def __init__(self, vocab_size, width=128, depth=4, heads=4, length=64,
                 cond="continuous", groups=data.COND_GROUPS):
        super().__init__()
        self.mask_id = vocab_size                                           # an id of its own
        self.embed = nn.Embedding(vocab_size + 1, width)
        self.register_buffer("positions", sincos_positions(width, int(length ** 0.5)))
        self.condition = ConditionEmbedding(width, cond, groups)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.final_norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Linear(width, 2 * width)
        self.head = nn.Linear(width, vocab_size)                            # logits over the codes
        for layer in (self.final_modulation, self.head):  # adaLN-Zero: uniform logits at first
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, ids, values, present):
        """Logits (B, T, V) at every position of ids (B, T), [MASK] allowed."""
        c = self.condition(values, present)                                 # (B, D)
        h = self.embed(ids) + self.positions                                # (B, T, D)
        for block in self.blocks:
            h = block(h, c)
        with runs.full_precision(h.device):                                 # the head: no bf16
            shift, scale = self.final_modulation(F.silu(c.float()))[:, None].chunk(2, -1)
            return self.head(modulate(self.final_norm(h.float()), shift, scale))


def build(config):
    """The network a run trains, shaped by its config, and its tokenizer (tokenizers.py)."""
    world = worlds.world(config)                                 # data.py's Shapes2D by default
    codebook = tokenizers.load_tokenizer("codebook", world)
    return MaskGIT(codebook.vocab_size, config["width"], config["depth"], config["heads"],
                   cond=config["cond"], groups=world.COND_GROUPS), codebook


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


def masked_loss(model, ids, values, present, rng, schedule="cosine"):
    """Cross-entropy -log p(x_i | x_unmasked, c), averaged over the masked positions only."""
    hidden = random_mask(*ids.shape, rng, schedule)
    logits = model(ids.masked_fill(hidden, model.mask_id), values, present)  # the answer is hidden
    at = hidden.nonzero(as_tuple=True)         # the step's one wait: how many are hidden (shapes)
    return F.cross_entropy(logits[at].float(), ids[at])


# ----------------------------------------------------------------------------- training
def train(config, build=build):        # maskgit_factored.py trains its own network
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


@torch.no_grad()
def sample(model, values, present, steps, rng, unmask="confidence", choice_temperature=4.5,
           length=64, schedule="cosine"):
    """Parallel decoding: start all hidden; at step s draw every hidden token from the head, keep
    some (the most confident, or a random choice: unmask) and hide gamma((s+1)/S) T of them
    again, so none is left after S steps."""
    device = next(model.parameters()).device                      # every draw is made there, by rng
    values, present = values.to(device), present.to(device)
    tokens = torch.full((len(values), length), model.mask_id, device=device)
    hidden = torch.ones((len(values), length), dtype=torch.bool, device=device)
    for s in range(steps):
        with runs.autocast(device):
            logits = model(tokens.masked_fill(hidden, model.mask_id), values, present).float()
        u = torch.rand(logits.shape, generator=rng, device=device)
        drawn = (logits - torch.log(-torch.log(u.clamp(1e-20)))).argmax(-1)  # Gumbel-max: x ~ p
        log_p = logits.log_softmax(-1).gather(-1, drawn[..., None])[..., 0]
        if unmask == "confidence":                                          # log p + annealed noise
            u = torch.rand(hidden.shape, generator=rng, device=device)
            g = -torch.log(-torch.log(u.clamp(1e-20)))                      # Gumbel noise
            confidence = log_p + choice_temperature * (1 - (s + 1) / steps) * g
        else:                                                               # a random order
            confidence = torch.rand(hidden.shape, generator=rng, device=device)
        confidence = confidence.masked_fill(~hidden, math.inf)              # decoded tokens stay
        remask = remask_count(s, steps, length, hidden, schedule)
        tokens = torch.where(hidden, drawn, tokens)
        hidden = torch.zeros_like(hidden)
        if remask > 0:
            lowest = confidence.argsort(1)[:, :remask]                      # least confident
            hidden = hidden.scatter(1, lowest, True)
    return tokens


# --------------------------------------------------------------------------- evaluation
def draw(model, tokenizer, config, values, present, rng):
    """What an evaluation draws: images (N, H, W, 3) in [0, 1] for the conditions
    (values, present)."""
    tokens = sample(model, values, present, config["sample_steps"], rng, config["unmask"],
                    config["choice_temperature"], schedule=config["mask_schedule"])
    return tokenizer.decode(tokens).clip(0, 1)


def main(argv=None):
    runs.run(NAME, get_config(argv), train)


if __name__ == "__main__":
    main()
