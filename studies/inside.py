"""Inside: what drives composition, read from a trained network's layers, heads and blocks.

    python studies/inside.py runs/maskgit                  # the last checkpoint: inside.json, table
    python studies/inside.py runs/maskgit --over-training  # also each kept checkpoint
    python studies/inside.py runs/maskgit --device cuda    # on a GPU (near the CPU's readings)

Reads any run of maskgit.py, jepa_maskgit.py, givt.py, mar.py or dit.py: the EMA network,
as the evaluations use it. Five readings, each defined here (the paper defines none of them;
where ours is a choice it says so):

  reach     Hide half the tokens of real images and score the truth at the hidden positions:
            MaskGIT's probability of the true code, GIVT's log-likelihood of the true token
            (nats per value), MAR's and DiT's x0 error (mean squared, per value) at fixed noise
            levels. Split by whether the position's codebook code occurs in the generators'
            training tokens: can the objective put mass where training never did?
  readout   A linear probe per factor (logistic regression) on each layer's hidden states,
            the input embedding and every block's output, averaged over the 64 tokens; trained
            on real images of the seen compositions, tested on level-1 and level-2. The network
            reads the image 90% hidden (masked models) or at noise level t = 0.9 (DiT): early in
            generation, where the composition is decided (our choice).
  units     Attribution A[unit, factor]: the drop in a factor's accuracy (the judge's reading:
            one legible object with that factor right; and the probe's) when one unit is mean-
            ablated while the model generates 8 samples of each composition, with the same
            random draws as the intact network. Units: each attention head (its output replaced
            by its mean), each block's MLP and each block's adaLN modulation (the condition's way
            into the block). Mean ablation (Wang et al. 2022; ACDC, Conmy et al. 2023, discuss
            it against zeroing, the head masking of Michel et al. 2019): a zeroed head puts the
            network where training never was, the mean removes only what the head says about
            this sample. --zero-ablation checks the other. The means are taken while the intact
            network generates, over samples, positions and decoding steps.
  polysemanticity  Per unit, the normalised entropy of |A[unit, .]| over the three factors
            (0: one factor, 1: all alike); per model the mean weighted by each unit's total
            |A| (heads alone, and all units).
  circuits  A factor's circuit: the units whose drop is at least half the largest drop for
            that factor (our rule). Jaccard |C_i & C_j| / |C_i | C_j| over factor pairs, and a
            weighted Jaccard sum(min(a_i, a_j)) / sum(max(a_i, a_j)) on the drops (>= 0).
  circuit ablation  The paper's Table 6: the colour circuit, then the shape circuit, ablated
            together; the drop in colour and shape accuracy on level-2 (4 x 8 = 32 samples of 111).

Sections: loading a run -> hooks (record and ablate) -> reach -> readout -> units and circuits
-> main.
"""
import argparse
import contextlib
import json
import math
import os
import re
import sys

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the top
import data
import judge
import probe
import runs
import tokenizers

FACTORS = data.FACTORS                                     # shape, color, size
LEVELS = (0.3, 0.6, 0.9)                                # DiT's and MAR's noise levels for the reach


# ------------------------------------------------------------------------------ loading a run
# not ar.py: every reading here hides tokens or adds noise, and a causal model does neither
READS = ("maskgit", "jepa_maskgit", "givt", "mar", "dit")
HALF, MOST = 32, 58                             # of an image's 64 tokens: hidden for reach, readout


def load_trained(run, checkpoint="ckpt.pt", models=runs.GENERATORS, device="cpu"):
    """A run's EMA network as its evaluations use it, on device:
    (step, config, model file, network, tokenizer)."""
    path = os.path.join(run, checkpoint)
    if not os.path.exists(path):
        raise SystemExit(f"error: {run} holds no {checkpoint}; give a run folder of a finished "
                         "or running run")
    state = torch.load(path, map_location="cpu", weights_only=True)
    config = state["config"]
    module = runs.script(config.get("model"))
    if config["model"] not in models:
        raise SystemExit(f"error: {run} is a run of {config['model']}.py; this reads runs of "
                         f"{', '.join(models)}")
    model, tokenizer = module.build(config)
    model.load_state_dict(state["ema"])
    return state["step"], config, module, model.to(device).eval(), tokenizer


def device_of(model):
    """Where the network is, and so every tensor it is given (the CPU, if it has no weights)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))


def generate(config, module, model, tokenizer, bits, seed=0):
    """Images (N, H, W, 3) in [0, 1] asked for bits (N, 3),
    drawn as the run's evaluations draw them."""
    return runs.generate(module.draw, model, tokenizer, config, bits, seed)


def asked(config, bits, seed, device="cpu"):
    """The condition asking for bits (N, 3), as the run's mode gives it at sampling, on device:
    (values, present)."""
    latents = data.sample_latents(bits, np.random.default_rng(seed))
    values, present = data.conditioning(latents, config["cond"], train=False)
    return values.to(device), present.to(device)


def masked_input(model, codes, hidden):
    """What a masked model (MaskGIT, JEPA-MaskGIT) reads: its own [MASK] id where hidden (N, 64)
    is True, the codes elsewhere."""
    return torch.where(hidden, model.mask_id, codes)


def real_images(n_per_code, seed=probe.HELD_OUT_SEED + 5):
    """Real images of all eight compositions, never seen by a generator: (images, bits)."""
    images, bits, _ = data.make_dataset(data.COMPOSITIONS, n_per_code, seed)
    return images, bits


# --------------------------------------------------------------------- hooks: record and ablate
def head_outputs(attention, h):
    """Each head's output before the output projection, (B, heads, T, d):
    softmax(q k^T / sqrt d) v."""
    b, t, width = h.shape
    q, k, v = F.linear(h, attention.in_proj_weight, attention.in_proj_bias).chunk(3, -1)

    def split(z):
        return z.view(b, t, attention.num_heads, -1).transpose(1, 2)       # (B, H, T, d)

    return F.scaled_dot_product_attention(split(q), split(k), split(v))


def units(model):
    """Every unit of the network: (name, block, kind, head index or None)."""
    names = []
    for i, block in enumerate(model.blocks):
        names += [(f"block {i} head {j}", block, "head", j)
                  for j in range(block.attention.num_heads)]
        names += [(f"block {i} mlp", block, "mlp", None),
                  (f"block {i} adaLN", block, "modulation", None)]
    return names


@contextlib.contextmanager
def recording(model):
    """Collects the mean output of every unit while the network runs: {name: mean vector}."""
    sums, hooks = {}, []

    def add(name, value):
        total, count = sums.get(name, (0, 0))
        sums[name] = (total + value.sum(0), count + len(value))
    def heads(i, attention, args):
        outputs = head_outputs(attention, args[0].float())                  # (B, H, T, d)
        for j in range(outputs.shape[1]):
            add(f"block {i} head {j}", outputs[:, j].flatten(0, 1))
    for i, block in enumerate(model.blocks):
        hooks.append(block.attention.register_forward_pre_hook(
            lambda m, args, i=i: heads(i, m, args)))
        for kind, name in (("mlp", "mlp"), ("modulation", "adaLN")):
            hooks.append(getattr(block, kind).register_forward_hook(
                lambda m, a, out, name=f"block {i} {name}": add(name, out.flatten(0, -2))))
    means = {}
    try:
        yield means
    finally:
        for hook in hooks:
            hook.remove()
        means.update({name: total / count for name, (total, count) in sums.items()})


@contextlib.contextmanager
def ablated(model, chosen, means, zero=False):
    """The network with the chosen units replaced by their mean output (or 0). A head is ablated
    through the output projection's weights: nn.MultiheadAttention calls its functional form
    with them, so a hook on out_proj would never run. Its columns go to 0 and the head's mean
    output, projected, goes into the bias: exactly that head's contribution replaced."""
    saved, hooks = [], []
    for name, block, kind, head in units(model):
        if name not in chosen:
            continue
        mean = torch.zeros_like(means[name]) if zero else means[name]
        if kind == "head":
            out = block.attention.out_proj
            saved.append((out, out.weight.detach().clone(), out.bias.detach().clone()))
            columns = slice(head * mean.numel(), (head + 1) * mean.numel())
            with torch.no_grad():
                out.bias += out.weight[:, columns] @ mean
                out.weight[:, columns] = 0
        else:
            def replace(m, a, out, mean=mean):                       # the output, as its mean
                return mean.expand_as(out)

            hooks.append(getattr(block, kind).register_forward_hook(replace))
    try:
        yield model
    finally:
        for hook in hooks:
            hook.remove()
        with torch.no_grad():
            for out, weight, bias in reversed(saved):    # last in, first out: two heads of a
                out.weight.copy_(weight)                 # block share out_proj
                out.bias.copy_(bias)


# ------------------------------------------------------------------------------------- reach
def reach(config, module, model, tokenizer, images, bits, trained_codes, seed=0):
    """The truth's score at hidden positions,
    split by whether its codebook code was ever trained on."""
    device = device_of(model)
    g = torch.Generator(device).manual_seed(seed)
    codebook = tokenizers.load_tokenizer("codebook")
    codes = torch.as_tensor(codebook.encode(images)).to(device)            # (N, 64)
    trained_codes = trained_codes.to(device)
    unseen = ~torch.isin(codes, trained_codes)
    order = torch.rand(codes.shape, generator=g, device=device)
    hidden = order.argsort(1) < HALF                                            # half of each image
    values, present = asked(config, bits, seed, device)
    scores = {}
    with torch.no_grad():
        if config["model"] in ("maskgit", "jepa_maskgit"):
            shown = masked_input(model, codes, hidden)
            p = model(shown, values, present).float().softmax(-1)
            scores["p(true code)"] = p.gather(-1, codes[..., None])[..., 0]
            untrained = torch.ones(p.shape[-1], dtype=torch.bool, device=device)
            untrained[trained_codes] = False
            scores["mass on untrained codes"] = p[..., untrained].sum(-1)
        elif config["model"] == "givt":
            x = tokenizer.encode(images).float().to(device)
            log_weights, means, scales = model(x, hidden, values, present)
            log_p = module.log_density(x, log_weights, means, scales)
            scores["log-likelihood per value"] = log_p / x.shape[-1]
        else:
            x = tokenizer.encode(images).float().to(device)
            for t in LEVELS:
                eps = torch.randn(x.shape, generator=g, device=device)
                time = torch.full((len(x),), t, device=device)
                if config["model"] == "dit":
                    error = (model(module.noisy(x, time, eps), time, values, present) - x) ** 2
                else:
                    z = model(x, hidden, values, present)
                    a = module.alpha_bar(time)[:, None, None]
                    x_t = a.sqrt() * x + (1 - a).sqrt() * eps
                    flat = (x_t.flatten(0, 1), time.repeat_interleave(x.shape[1]), z.flatten(0, 1))
                    eps_hat = model.diffusion(*flat).view_as(x)
                    error = ((x_t - (1 - a).sqrt() * eps_hat) / a.sqrt() - x) ** 2
                scores[f"x0 error at t={t}"] = error.mean(-1)
    where = hidden if config["model"] != "dit" else torch.ones_like(hidden)     # DiT hides by noise
    splits = (("trained code", ~unseen), ("untrained code", unseen))
    found = {name: {split: float(score[where & among].mean()) if (where & among).any() else None
                    for split, among in splits}
             for name, score in scores.items()}
    return found | {"untrained share of hidden positions": float(unseen[where].float().mean())}


# ----------------------------------------------------------------------------------- readout
def layer_states(config, module, model, tokenizer, images, bits, seed=0):
    """(layers, N, D): the input embedding and every block's output, averaged over the 64 tokens,
    while the network reads real images 90% hidden (masked models) or at t = 0.9 (DiT)."""
    states = []

    def keep(h):
        states.append(h.float().mean(1))                                # (N, D): the tokens' mean

    hooks = [model.blocks[0].register_forward_pre_hook(lambda m, args: keep(args[0]))]
    hooks += [block.register_forward_hook(lambda m, a, out: keep(out)) for block in model.blocks]
    device = device_of(model)
    g = torch.Generator(device).manual_seed(seed)
    order = torch.rand(len(images), 64, generator=g, device=device)
    hidden = order.argsort(1) < MOST                                                    # 90% of 64
    values, present = asked(config, bits, seed, device)
    try:
        with torch.no_grad():
            if config["model"] in ("maskgit", "jepa_maskgit"):
                codes = torch.as_tensor(tokenizer.encode(images)).to(device)
                model(masked_input(model, codes, hidden), values, present)
            elif config["model"] == "dit":
                x = tokenizer.encode(images).float().to(device)
                time = torch.full((len(images),), 0.9, device=device)
                eps = torch.randn(x.shape, generator=g, device=device)
                model(module.noisy(x, time, eps), time, values, present)
            else:
                model(tokenizer.encode(images).float().to(device), hidden, values, present)
    finally:                                            # an error leaves no hook on the network
        for hook in hooks:
            hook.remove()
    return torch.stack(states).cpu()                            # the probes are small: the CPU's


def linear_probe(train_x, train_y, test_x, steps=300):
    """Logistic regression on standardised features
    (Adam, weight decay 1e-3): 0/1 predictions for test_x."""
    mean, std = train_x.mean(0), train_x.std(0) + 1e-6
    w, b = torch.zeros(train_x.shape[1], requires_grad=True), torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.Adam([w, b], lr=0.05, weight_decay=1e-3)
    x, y = (train_x - mean) / std, train_y.float()
    for _ in range(steps):
        loss = F.binary_cross_entropy_with_logits(x @ w + b, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        return (((test_x - mean) / std) @ w + b > 0).long()


def readout(states, bits, shuffled=False, seed=0):
    """{layer: {factor: {split: accuracy}}}: probes trained on the seen compositions' states."""
    codes = np.array([data.bits_to_code(b) for b in bits])
    splits = {split: torch.as_tensor(np.isin(codes, members))
              for split, members in data.SPLITS.items()}
    labels = torch.as_tensor(bits)
    if shuffled:                                                       # the control: no information
        labels = labels[torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))]
    names = ["input"] + [f"block {i}" for i in range(len(states) - 1)]
    result = {}
    for name, x in zip(names, states):
        result[name] = {}
        for f, factor in enumerate(FACTORS):
            predicted = linear_probe(x[splits["seen"]], labels[splits["seen"], f], x)
            right = predicted == labels[:, f]
            result[name][factor] = {split: float(right[among].float().mean())
                                    for split, among in splits.items()}
    return result


# ------------------------------------------------------------------------ units and circuits
def factors_right(images, bits, the_probe):
    """Per sample and factor (N, 3): the judge's reading (one legible object, that factor right)
    and the probe's (that factor right, however the drawing looks)."""
    objects = judge.read_objects(np.asarray(images, dtype=np.float32))
    legible_right = judge.legible(objects)[:, None] & (objects["bits"] == bits)
    return dict(judge=legible_right, probe=the_probe.predict(images) == bits)


def attribution(config, module, model, tokenizer, per_code=8, zero=False):
    """Accuracy per factor of the intact network, and A[unit] = its drop with the unit ablated."""
    bits = np.repeat([data.code_to_bits(c) for c in data.COMPOSITIONS], per_code, 0)
    the_probe = judge.load_reader()
    with recording(model) as means:
        intact = factors_right(generate(config, module, model, tokenizer, bits), bits, the_probe)
    base = {reading: right.mean(0) for reading, right in intact.items()}
    drops = {}
    for name, *_ in tqdm(list(units(model)), desc="ablating units", leave=False):  # a sampling each
        with ablated(model, {name}, means, zero):
            right = factors_right(generate(config, module, model, tokenizer, bits), bits, the_probe)
        drops[name] = {reading: (base[reading] - r.mean(0)).tolist()
                       for reading, r in right.items()}
    return {reading: b.tolist() for reading, b in base.items()}, drops, means


def polysemanticity(a):
    """Normalised entropy of |a| over the factors:
    0 for one factor, 1 for all alike (nan if a = 0)."""
    p = np.abs(np.asarray(a, dtype=float))
    if p.sum() == 0:
        return float("nan")
    p = p / p.sum()
    return float(-(p[p > 0] * np.log(p[p > 0])).sum() / math.log(len(p)))


def weighted_polysemanticity(rows):
    """The mean polysemanticity over units, each weighted by its total |attribution|."""
    weights = np.array([np.abs(a).sum() for a in rows])
    values = np.array([polysemanticity(a) if w > 0 else 0.0 for a, w in zip(rows, weights)])
    return float((weights * values).sum() / weights.sum()) if weights.sum() > 0 else float("nan")


def circuit(drops, f, share=0.5):
    """The units whose drop for factor f is at least
    `share` of the largest (none if nothing drops)."""
    a = {name: max(d[f], 0.0) for name, d in drops.items()}
    top = max(a.values(), default=0.0)
    return {name for name, value in a.items() if top > 0 and value >= share * top}


def jaccard(a, b):
    return len(a & b) / len(a | b) if a | b else float("nan")


def weighted_jaccard(a, b):
    """sum min(a_u, b_u) / sum max(a_u, b_u) over units, on drops clipped at 0."""
    a, b = np.clip(a, 0, None), np.clip(b, 0, None)
    union = np.maximum(a, b).sum()
    return float(np.minimum(a, b).sum() / union) if union > 0 else float("nan")


def circuits(drops):
    """Per factor its circuit; per factor pair the Jaccard index and the weighted one."""
    sets = {factor: circuit(drops, f) for f, factor in enumerate(FACTORS)}
    pairs = {}
    for i in range(3):
        for j in range(i + 1, 3):
            a, b = ([d[k] for d in drops.values()] for k in (i, j))
            pairs[f"{FACTORS[i]}-{FACTORS[j]}"] = dict(
                jaccard=jaccard(sets[FACTORS[i]], sets[FACTORS[j]]),
                weighted=weighted_jaccard(a, b))
    return {factor: sorted(s) for factor, s in sets.items()}, pairs


def circuit_ablation(config, module, model, tokenizer, sets, means, n=32):
    """Level-2 accuracy drop per factor (probe and judge)
    with the colour, then the shape circuit ablated."""
    bits = np.repeat([data.code_to_bits("111")], n, 0)
    the_probe = judge.load_reader()
    right = factors_right(generate(config, module, model, tokenizer, bits), bits, the_probe)
    intact = {reading: v.mean(0) for reading, v in right.items()}
    table = {}
    for factor in ("color", "shape"):
        with ablated(model, set(sets[factor]), means):
            right = factors_right(generate(config, module, model, tokenizer, bits), bits, the_probe)
        table[f"{factor} circuit"] = {reading: dict(zip(FACTORS,
                                                        (intact[reading] - v.mean(0)).tolist()))
                                      for reading, v in right.items()}
    return table


# -------------------------------------------------------------------------------------- main
def read(run, checkpoint="ckpt.pt", per_code=8, zero=False, images_per_code=64, full=True,
         device="cpu"):
    """Every reading of one checkpoint (what inside.json holds);
    full=False: the units and circuits only."""
    path = os.path.join(run, "config.json")
    world = json.load(open(path)).get("world", data.NAME) if os.path.exists(path) else data.NAME
    if world != data.NAME:
        raise SystemExit(f"error: {run} learnt --world {world}; inside.py reads runs of Shapes2D "
                         "(its real images, codebook and judge)")
    step, config, module, model, tokenizer = load_trained(run, checkpoint, READS, device)
    torch.manual_seed(0)
    base, drops, means = attribution(config, module, model, tokenizer, per_code, zero)
    sets, pairs = circuits({name: d["probe"] for name, d in drops.items()})
    polysemantic = {}
    for reading in ("probe", "judge"):                                 # heads alone, and every unit
        heads = [d[reading] for name, d in drops.items() if "head" in name]
        polysemantic[reading] = dict(
            heads=weighted_polysemanticity(heads),
            units=weighted_polysemanticity([d[reading] for d in drops.values()]))
    result = dict(run=run, model=config["model"], step=step, ablation="zero" if zero else "mean",
                  samples_per_comp=per_code, accuracy=base, circuits=sets, overlap=pairs,
                  polysemanticity=polysemantic)
    if not full:
        return result
    at_step = [m for m in runs.read_metrics(run) if m["step"] == step]      # the run's own readings
    if at_step:
        keys = ("seen", "level1", "level2", "acc", "fidelity", "probe_acc")
        result["readings"] = {key: at_step[0][key] for key in keys}
    images, bits = real_images(images_per_code)
    training = data.training_set(config["train_per_comp"])[0]         # fresh data: its first images
    codebook = tokenizers.load_tokenizer("codebook")
    trained_codes = torch.as_tensor(np.unique(codebook.encode(training)))
    states = layer_states(config, module, model, tokenizer, images, bits)
    return dict(result, attribution=drops,
                reach=reach(config, module, model, tokenizer, images, bits, trained_codes),
                readout=readout(states, bits),
                readout_shuffled=readout(states[-1:], bits, shuffled=True)["input"],
                circuit_ablation=circuit_ablation(config, module, model, tokenizer, sets, means,
                                                  4 * per_code))


def summary(result):
    """A few lines for the terminal."""
    lines = [f"{result['model']} at step {result['step']} ({result['ablation']} ablation, "
             f"{result['samples_per_comp']} samples a composition)"]
    lines += [f"  reach, {name}: "
              + " | ".join(f"{k} {v:.4f}" for k, v in splits.items() if v is not None)
              for name, splits in result["reach"].items() if isinstance(splits, dict)]
    lines += [f"  readout {layer:<8} level-2 "
              + " ".join(f"{f} {100 * v['level2']:.0f}" for f, v in factors.items())
              for layer, factors in result["readout"].items()]
    poly = result["polysemanticity"]["probe"]
    lines.append(f"  polysemanticity (probe): heads {poly['heads']:.2f}, all units "
                 f"{poly['units']:.2f}; overlap: "
                 + " | ".join(f"{pair} {v['jaccard']:.2f} ({v['weighted']:.2f})"
                              for pair, v in result["overlap"].items()))
    lines += [f"  {name} ablated: level-2 drop (probe) colour {100 * d['probe']['color']:.1f}, "
              f"shape {100 * d['probe']['shape']:.1f}"
              for name, d in result["circuit_ablation"].items()]
    return "\n".join(lines)


def kept_steps(run):
    """The steps of every other kept checkpoint (run/checkpoints/step_N.pt), steps x2 apart,
    ending at the last; a stray file there (the .tmp of an interrupted save) is no step."""
    kept = os.path.join(run, "checkpoints")
    names = [re.fullmatch(r"step_(\d+)\.pt", f) for f in os.listdir(kept)] if os.path.isdir(kept) \
        else []
    return sorted(int(m.group(1)) for m in names if m)[::-1][::2][::-1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a run folder (ckpt.pt, config and all)")
    parser.add_argument("--samples-per-comp", type=int, default=8,
                        help="samples per composition for each ablation")
    parser.add_argument("--images-per-comp", type=int, default=64,
                        help="real images per composition for reach and readout")
    parser.add_argument("--zero-ablation", action="store_true",
                        help="ablate to 0 instead of the mean")
    parser.add_argument("--device", default="cpu", choices=("auto", "cuda", "mps", "cpu"),
                        help="cpu by default: the committed readings were read there, and a GPU's "
                             "sampling (bf16) reads a little differently")
    parser.add_argument("--over-training", action="store_true",
                        help="also the units and circuits at every other kept checkpoint "
                             "(checkpoints/step_N.pt), "
                             "steps x2 apart, ending at the last")
    args = parser.parse_args(argv)
    for name in ("samples_per_comp", "images_per_comp"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer, got "
                         f"{getattr(args, name)}")
    if not os.path.isdir(args.run):
        parser.error(f"{args.run} is not a folder")
    kept, steps = os.path.join(args.run, "checkpoints"), kept_steps(args.run)
    if args.over_training and not steps:
        parser.error(f"--over-training: {kept} holds no checkpoints; train with --keep-checkpoints")
    device = runs.resolve_device(args.device)
    result = read(args.run, per_code=args.samples_per_comp, zero=args.zero_ablation,
                  images_per_code=args.images_per_comp, device=device)
    print(summary(result), flush=True)
    if args.over_training:
        result["over_training"] = [read(args.run, os.path.join("checkpoints", f"step_{step}.pt"),
                                        args.samples_per_comp, args.zero_ablation, full=False,
                                        device=device) for step in steps]
        for r in result["over_training"]:
            print(f"  step {r['step']}: polysemanticity (probe) heads "
                  f"{r['polysemanticity']['probe']['heads']:.2f}, "
                  f"all units {r['polysemanticity']['probe']['units']:.2f}; colour-shape overlap "
                  f"{r['overlap']['shape-color']['jaccard']:.2f}")
    path = os.path.join(args.run, "inside-zero.json" if args.zero_ablation else "inside.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
