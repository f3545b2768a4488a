"""MaskGIT: a masked transformer over discrete tokens, the categorical end of the ladder.

Each image is 64 codebook ids (data.Codebook: 4x4 patches, 2048 codes). Training hides a
random fraction of the ids behind [MASK] and asks for a categorical distribution over the
codebook at each hidden position (cross-entropy). Sampling starts from all [MASK] and
commits the most confident ids over a few parallel steps. The condition enters through
adaLN-Zero, the same mechanism as in dit.py. Trained on seen compositions only.

    python maskgit.py                                       # the default run
    python maskgit.py --unmask random --out runs/maskgit-random

Sections: config -> model -> masking -> training -> sampling -> evaluation.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

import data
import runs

MODEL = "maskgit"
SAMPLING = ("sample_steps", "unmask", "choice_temperature")   # what tools/resample.py may change


# -------------------------------------------------------------------------------- config
# What a run trains with unless a flag says otherwise: the ladder's one recipe, the same in every
# generator (tests/test_ladder.py holds the copies together). config.json records each value.
DEFAULTS = dict(steps=2000, batch_size=64, lr=1e-3, warm_up_steps=200, weight_decay=0.0,
                ema_decay=0.999, adamw_betas=[0.9, 0.99], clip_norm=1.0, eval_every=250,
                width=128, depth=4, heads=4)


def parse(argv=None, model=MODEL, more_arguments=None, more_checks=None, description=__doc__):
    parser = argparse.ArgumentParser(description=description, formatter_class=runs.Help)
    runs.add_common_arguments(parser, model, DEFAULTS)
    parser.add_argument("--sample-steps", type=int, default=10, help="parallel decoding steps")
    parser.add_argument("--mask-schedule", default="cosine", choices=("cosine", "linear"),
                        help="gamma(r), the share of tokens hidden, in training and in decoding")
    parser.add_argument("--unmask", default="confidence", choices=("confidence", "random"),
                        help="which masked ids to commit at each decoding step")
    parser.add_argument("--choice-temperature", type=float, default=4.5,
                        help="Gumbel noise on the confidence, annealed to 0 over decoding")
    parser.add_argument("--label-smoothing", type=float, default=0.0,
                        help="target mass spread evenly over the codebook in the cross-entropy")
    parser.add_argument("--factored-head", action="store_true",
                        help="predict a code's two parts, coverage mask and colour, as two "
                             "categoricals")
    if more_arguments:                                                     # jepa_maskgit.py's flags
        more_arguments(parser)
    args = parser.parse_args(argv)
    if args.sample_steps < 1:
        parser.error(f"--sample-steps must be a positive integer, got {args.sample_steps}")
    if not 0 <= args.label_smoothing < 1:
        parser.error(f"--label-smoothing must be in [0, 1), got {args.label_smoothing}")
    if more_checks:                                                         # ... and their checks
        more_checks(parser, args)
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


class MaskGIT(nn.Module):
    def __init__(self, vocab_size, width=128, depth=4, heads=4, length=64, parts=None,
                 cond="continuous"):
        super().__init__()
        self.mask_id = vocab_size                                           # an id of its own
        self.embed = nn.Embedding(vocab_size + 1, width)
        self.register_buffer("positions", sincos_positions(width, int(length ** 0.5)))
        self.condition = ConditionEmbedding(width, cond)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.final_norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Linear(width, 2 * width)
        # parts = (coverages, colours): logits a_coverage + b_colour, so
        # p(code) = p(coverage) p(colour), a product that can put mass on a pair never seen
        # together (a blue triangle edge) if each part was seen
        self.parts = parts
        self.head = nn.Linear(width, vocab_size if parts is None else sum(parts))
        for layer in (self.final_modulation, self.head):  # adaLN-Zero: uniform logits at first
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def hidden_states(self, ids, values, present):
        """The condition c (B, D) and every block's output, a list of depth (B, T, D) tensors."""
        c = self.condition(values, present)                                 # (B, D)
        h = self.embed(ids) + self.positions                                # (B, T, D)
        states = []
        for block in self.blocks:
            h = block(h, c)
            states.append(h)
        return c, states

    def readout(self, h, c):
        """Logits (B, T, V) over the codebook from the last block's output h (B, T, D), in fp32."""
        with runs.full_precision(h.device):                                 # the head: no bf16
            shift, scale = self.final_modulation(F.silu(c.float()))[:, None].chunk(2, -1)
            logits = self.head(modulate(self.final_norm(h.float()), shift, scale))
        if self.parts is None:
            return logits
        coverages, colours = logits.split(self.parts, -1)     # id = coverage * colours + colour
        return (coverages[..., :, None] + colours[..., None, :]).flatten(-2)   # (B, T, V)

    def forward(self, ids, values, present):
        """Logits (B, T, V) at every position of ids (B, T), [MASK] allowed."""
        c, states = self.hidden_states(ids, values, present)
        return self.readout(states[-1], c)


def build(config):
    """The network a run trains, shaped by its config, and its tokenizer: the codebook (data.py)."""
    codebook = data.load_tokenizer("codebook")
    parts = (codebook.n_masks, codebook.n_colors) if config["factored_head"] else None
    return MaskGIT(codebook.vocab_size, config["width"], config["depth"], config["heads"],
                   parts=parts, cond=config["cond"]), codebook


# ------------------------------------------------------------------------------ masking
def mask_ratio(r, schedule="cosine"):
    """gamma(r): 1 (all masked) at r = 0, 0 at r = 1. cosine: cos(pi r / 2), concave, the MaskGIT
    paper's choice (training hides many tokens more often); linear: 1 - r."""
    if schedule == "linear":
        return 1 - r
    if schedule == "cosine":
        return torch.cos(math.pi / 2 * r)
    raise ValueError(f"unknown mask schedule {schedule!r}: cosine or linear")


def random_mask(batch, length, generator, schedule="cosine"):
    """(B, T) bool, True = hidden: ceil(gamma(r) T) of a row's T positions (rounded up, so never
    none), r ~ U(0, 1) drawn once per row."""
    r = torch.rand(batch, generator=generator, device=generator.device)    # where generator is
    count = (mask_ratio(r, schedule) * length).ceil().clamp(min=1)          # (B,)
    keys = torch.rand(batch, length, generator=generator, device=generator.device)
    rank = keys.argsort(1).argsort(1)
    return rank < count[:, None]                                            # a random subset


def masked_loss(model, ids, values, present, generator, label_smoothing=0.0, schedule="cosine"):
    """Cross-entropy -log p(x_i | x_unmasked, c), averaged over the masked positions only."""
    hidden = random_mask(*ids.shape, generator, schedule)
    logits = model(ids.masked_fill(hidden, model.mask_id), values, present)  # the answer is hidden
    return F.cross_entropy(logits[hidden].float(), ids[hidden], label_smoothing=label_smoothing)


# ----------------------------------------------------------------------------- training
def train(config):
    device = torch.device(config["device"])
    torch.manual_seed(config["seed"])
    generator = torch.Generator(device).manual_seed(config["seed"])   # data order, masks, dropout
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
            loss = masked_loss(model, batch, values, present, generator, config["label_smoothing"],
                               config["mask_schedule"])
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
                                    title=f"MaskGIT ({config['cond']}, "
                                          f"{config['unmask']} unmasking)")
            progress.write(f"step {step + 1}: seen {100 * metrics['seen']:.1f} | level-1 "
                           f"{100 * metrics['level1']:.1f} | level-2 {100 * metrics['level2']:.1f}")
            runs.save_checkpoint(config["out"], model=model.state_dict(), ema=ema.state_dict(),
                                  optimizer=optimizer.state_dict(), scaler=scaler.state_dict(),
                                  step=step + 1, config=config, rng=generator.get_state())
    return metrics or runs.read_metrics(config["out"])[-1]


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
def sample(model, values, present, steps, generator, unmask="confidence", choice_temperature=4.5,
           length=64, schedule="cosine"):
    """Parallel decoding: start all [MASK]; at step s sample every masked id, keep the most
    confident, and re-mask gamma((s+1)/S) T of them, so none is left after S steps."""
    device = next(model.parameters()).device                # every draw is made there, by generator
    values, present = values.to(device), present.to(device)
    ids = torch.full((len(values), length), model.mask_id, device=device)
    for s in range(steps):
        hidden = ids == model.mask_id
        with runs.autocast(device):
            logits = model(ids, values, present).float()
        u = torch.rand(logits.shape, generator=generator, device=device)
        drawn = (logits - torch.log(-torch.log(u.clamp(1e-20)))).argmax(-1)  # Gumbel-max: x ~ p
        log_p = logits.log_softmax(-1).gather(-1, drawn[..., None])[..., 0]
        if unmask == "confidence":                                          # log p + annealed noise
            u = torch.rand(ids.shape, generator=generator, device=device)
            g = -torch.log(-torch.log(u.clamp(1e-20)))                      # Gumbel noise
            confidence = log_p + choice_temperature * (1 - (s + 1) / steps) * g
        else:                                                               # a random order
            confidence = torch.rand(ids.shape, generator=generator, device=device)
        confidence = confidence.masked_fill(~hidden, math.inf)              # decoded ids stay
        remask = remask_count(s, steps, length, hidden, schedule)
        ids = torch.where(hidden, drawn, ids)
        if remask > 0:
            lowest = confidence.argsort(1)[:, :remask]                      # least confident
            ids = ids.scatter(1, lowest, model.mask_id)
    return ids


# --------------------------------------------------------------------------- evaluation
def draw(model, tokenizer, config, values, present, generator):
    """What an evaluation draws: images (N, H, W, 3) in [0, 1] for the conditions
    (values, present)."""
    ids = sample(model, values, present, config["sample_steps"], generator, config["unmask"],
                 config["choice_temperature"], schedule=config["mask_schedule"])
    return tokenizer.decode(ids.cpu()).clip(0, 1)


def main(argv=None):
    runs.run(MODEL, get_config(argv), train)


if __name__ == "__main__":
    main()
