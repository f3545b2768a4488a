"""JEPA-MaskGIT: maskgit.py plus a continuous latent-prediction loss on its hidden layers.

The intervention of the study, and nothing else: MaskGIT keeps its categorical loss over
codebook ids, and gains a second, continuous objective. The model (the "context" model)
sees the masked ids, as in MaskGIT. A target model, an EMA copy of it, sees the full ids
under stop-gradient. At the chosen layers, a small predictor maps the context model's
hidden state at each masked position to the target's hidden state there (layer-normed),
scored by mean squared error:

    loss = cross-entropy(masked ids) + lambda * mean_l || predictor_l(h_l) - LN(sg(h_l_target)) ||^2

Model, tokenizer, flags, masking, sampler and evaluation are maskgit.py's.

    python jepa_maskgit.py                                  # the default run
    python jepa_maskgit.py --jepa-layers 1,3 --jepa-weight 0.3 --out runs/jepa-13-03

Sections: config -> model (the predictor, and the blocks' outputs) -> the JEPA loss ->
training; sampling and evaluation are maskgit.py's.
"""
import argparse
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

import data
import maskgit
import runs
import worlds
from maskgit import build, draw, random_mask

NAME = "jepa_maskgit"
SAMPLING = maskgit.SAMPLING    # what tools/resample.py may change: maskgit.py's sampler


# -------------------------------------------------------------------------------- config
# maskgit.py's values, every one, and the JEPA loss's own.
DEFAULTS = dict(maskgit.DEFAULTS, jepa_layers=[2, 3], jepa_weight=0.6, jepa_momentum=0.996)


def layer_list(text):
    try:
        layers = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError("expected a comma list of block indices such as 2,3, "
                                         f"got {text!r}")
    return layers


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=runs.Help)
    runs.add_common_arguments(parser, NAME, DEFAULTS)
    maskgit.add_arguments(parser)
    parser.add_argument("--jepa-layers", type=layer_list, default=DEFAULTS["jepa_layers"],
                        help="blocks (0-based) whose outputs are predicted; default: the "
                             "upper half")
    parser.add_argument("--jepa-weight", type=float, default=DEFAULTS["jepa_weight"],
                        help="lambda, the JEPA loss weight")
    parser.add_argument("--jepa-momentum", type=float, default=DEFAULTS["jepa_momentum"],
                        help="target EMA momentum at the start; it rises linearly to 1 at "
                             "the last step")
    args = runs.parse_args(parser, argv)
    bad = [layer for layer in args.jepa_layers if not 0 <= layer < args.depth]
    if bad:
        parser.error(f"--jepa-layers: block {bad[0]} does not exist; "
                     f"blocks are 0..{args.depth - 1}")
    if not 0 <= args.jepa_momentum <= 1:
        parser.error(f"--jepa-momentum must be in [0, 1], got {args.jepa_momentum}")
    return parser, args


def get_config(argv=None):
    return runs.start_run(*parse(argv), NAME)


# --------------------------------------------------------------------------------- model
def make_predictors(width, layers):
    """One lightweight MLP per chosen layer."""
    return nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width))
                         for _ in layers)


def block_outputs(model, ids, values, present):
    """MaskGIT.forward up to its head, keeping what JEPA predicts: the condition c (B, D) and
    every block's output, a list of depth (B, T, D) tensors."""
    c = model.condition(values, present)                                    # (B, D)
    h = model.embed(ids) + model.positions                                  # (B, T, D)
    outputs = []
    for block in model.blocks:
        h = block(h, c)
        outputs.append(h)
    return c, outputs


def readout(model, h, c):
    """MaskGIT.forward's head on the last block's output h (B, T, D): logits (B, T, V), in fp32."""
    with runs.full_precision(h.device):
        shift, scale = model.final_modulation(F.silu(c.float()))[:, None].chunk(2, -1)
        return model.head(maskgit.modulate(model.final_norm(h.float()), shift, scale))


# ------------------------------------------------------------------------------ JEPA loss
def jepa_losses(model, target, predictors, ids, values, present, rng, layers, schedule="cosine"):
    """(cross-entropy, JEPA loss) on one batch; the hidden tokens are drawn exactly as maskgit.py
    draws them."""
    hidden = random_mask(*ids.shape, rng, schedule)
    c, context = block_outputs(model, ids.masked_fill(hidden, model.mask_id), values, present)
    at = hidden.nonzero(as_tuple=True)         # the step's one wait: how many are hidden (shapes)
    cross_entropy = F.cross_entropy(readout(model, context[-1], c)[at].float(), ids[at])
    with torch.no_grad():                                                   # stop-gradient
        _, targets = block_outputs(target, ids, values, present)            # the full input
    jepa = sum(F.mse_loss(predictor(context[layer][at]).float(),
                          F.layer_norm(targets[layer][at].float(), (context[layer].shape[-1],)))
               for predictor, layer in zip(predictors, layers)) / len(layers)
    return cross_entropy, jepa


def target_momentum(step, steps, start):
    """The target's EMA momentum at a step: start at step 0, rising linearly to 1 at the last
    step, so the target moves less and less (I-JEPA's schedule)."""
    return start + (1 - start) * step / steps


# ----------------------------------------------------------------------------- training
def train(config):
    device = torch.device(config["device"])
    torch.manual_seed(config["seed"])
    rng = torch.Generator(device).manual_seed(config["seed"])          # every draw of training
    model, tokenizer = build(config)                                        # maskgit.py's network
    model = model.to(device)
    ema = copy.deepcopy(model).requires_grad_(False)                   # the network evaluations use
    if config["compile"]:                                # --compile: the blocks, for long runs
        for block in model.blocks:
            block.compile(backend=config["compile"])
    target = copy.deepcopy(ema)                                            # the JEPA target encoder
    predictors = make_predictors(config["width"], config["jepa_layers"]).to(device)
    weights = list(model.parameters()) + list(predictors.parameters())
    optimizer = torch.optim.AdamW(weights, lr=config["lr"], betas=config["adamw_betas"],
                                  weight_decay=config["weight_decay"], fused=device.type == "cuda")
    scaler = runs.grad_scaler(device)                                       # fp16 only: runs.py
    training = data.TrainingData(config["data"], config["train_per_comp"], config["cond"],
                                 config["cond_drop"], tokenizer.encode, device,
                                 worlds.world(config))
    checkpoints = runs.Checkpoints(config, model=model, ema=ema, target=target,
                                   predictors=predictors, optimizer=optimizer, scaler=scaler,
                                   rng=rng)
    followed = list(model.parameters())                    # what the EMA and the target follow
    ema_weights, target_weights = list(ema.parameters()), list(target.parameters())
    start = checkpoints.resume()                               # 0, or the step --resume goes on
    for step in tqdm(range(start, config["steps"]), NAME, config["steps"], initial=start):
        batch, values, present = training.batch(config["batch_size"], rng)  # tokens, condition
        for group in optimizer.param_groups:                            # warm-up, then the schedule
            group["lr"] = runs.learning_rate(config, step)
        with runs.autocast(device):                                         # bf16 or fp16 on a GPU
            cross_entropy, jepa = jepa_losses(model, target, predictors, batch, values, present,
                                              rng, config["jepa_layers"], config["mask_schedule"])
        loss = cross_entropy + config["jepa_weight"] * jepa
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)                                          # clip true gradients
        torch.nn.utils.clip_grad_norm_(weights, config["clip_norm"])
        scaler.step(optimizer)
        scaler.update()
        decay = min(config["ema_decay"], (1 + step) / (10 + step))          # EMA with warm-up
        momentum = target_momentum(step, config["steps"], config["jepa_momentum"])
        with torch.no_grad():
            torch._foreach_lerp_(ema_weights, followed, 1 - decay)   # ema += (1 - d)(model - ema)
            torch._foreach_lerp_(target_weights, followed, 1 - momentum)     # the target's update
        if checkpoints.due(step + 1):                # the loss is read here, not at every step
            runs.draw_and_read(draw, ema, tokenizer, config, step + 1, loss)
            checkpoints.save(step + 1)


def main(argv=None):
    runs.run(NAME, get_config(argv), train)


if __name__ == "__main__":
    main()
