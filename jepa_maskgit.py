"""JEPA-MaskGIT: maskgit.py plus a continuous latent-prediction loss on its hidden layers.

The intervention of the study, and nothing else: MaskGIT keeps its categorical loss over
codebook ids, and gains a second, continuous objective. The model (the "context" model)
sees the masked ids, as in MaskGIT. A target model, an EMA copy of it, sees the full ids
under stop-gradient. At the chosen layers, a small predictor maps the context model's
hidden state at each masked position to the target's hidden state there (layer-normed),
scored by mean squared error:

    loss = cross-entropy(masked ids) + lambda * mean_l || predictor_l(h_l) - LN(sg(h_l_target)) ||^2

Model, tokenizer, masking, sampler and evaluation are imported from maskgit.py.

    python jepa_maskgit.py                                  # the default run
    python jepa_maskgit.py --jepa-layers 1,3 --jepa-weight 0.3 --out runs/jepa-13-03

Sections: config -> model (the predictor) -> the JEPA loss -> training; sampling and
evaluation are maskgit.py's.
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
from maskgit import build, draw, random_mask

MODEL = "jepa_maskgit"
SAMPLING = maskgit.SAMPLING    # what tools/resample.py may change: maskgit.py's sampler


# -------------------------------------------------------------------------------- config
def layer_list(text):
    try:
        layers = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError("expected a comma list of block indices such as 2,3, "
                                         f"got {text!r}")
    return layers


def jepa_arguments(parser):
    parser.add_argument("--jepa-layers", type=layer_list, default=[2, 3],
                        help="blocks (0-based) whose outputs are predicted; default: the "
                             "upper half")
    parser.add_argument("--jepa-weight", type=float, default=0.6,
                        help="lambda, the JEPA loss weight")
    parser.add_argument("--jepa-momentum", type=float, default=0.996,
                        help="target EMA momentum at the start; it rises linearly to 1 at "
                             "the last step")


def jepa_checks(parser, args):
    bad = [layer for layer in args.jepa_layers if not 0 <= layer < args.depth]
    if bad:
        parser.error(f"--jepa-layers: block {bad[0]} does not exist; "
                     f"blocks are 0..{args.depth - 1}")
    if args.jepa_weight < 0:
        parser.error(f"--jepa-weight must be >= 0, got {args.jepa_weight}")
    if not 0 <= args.jepa_momentum <= 1:
        parser.error(f"--jepa-momentum must be in [0, 1], got {args.jepa_momentum}")


def parse(argv=None):
    return maskgit.parse(argv, MODEL, jepa_arguments, jepa_checks, __doc__)


def get_config(argv=None):
    return runs.start_run(*parse(argv), MODEL)


# --------------------------------------------------------------------------------- model
def make_predictors(width, layers):
    """One lightweight MLP per chosen layer."""
    return nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width))
                         for _ in layers)


# ------------------------------------------------------------------------------ JEPA loss
def jepa_losses(model, target, predictors, ids, values, present, generator, layers,
                label_smoothing=0.0, schedule="cosine"):
    """(cross-entropy, JEPA loss) on one batch; the hidden tokens are drawn exactly as maskgit.py
    draws them."""
    hidden = random_mask(*ids.shape, generator, schedule)
    c, context = model.hidden_states(ids.masked_fill(hidden, model.mask_id), values, present)
    cross_entropy = F.cross_entropy(model.readout(context[-1], c)[hidden].float(), ids[hidden],
                                    label_smoothing=label_smoothing)               # as maskgit.py's
    with torch.no_grad():                                                   # stop-gradient
        _, targets = target.hidden_states(ids, values, present)             # the full input
    jepa = sum(F.mse_loss(predictor(context[layer][hidden]).float(),
                          F.layer_norm(targets[layer][hidden].float(), (context[layer].shape[-1],)))
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
    generator = torch.Generator(device).manual_seed(config["seed"])   # data order, masks, dropout
    model, tokenizer = build(config)                                        # maskgit.py's network
    model = model.to(device)
    training = data.TrainingData(config["data"], config["train_per_comp"], tokenizer.encode, device)
    ema = runs.ema_copy(model)                                         # the network evaluations use
    target = copy.deepcopy(ema)                                            # the JEPA target encoder
    predictors = make_predictors(config["width"], config["jepa_layers"]).to(device)
    parameters = list(model.parameters()) + list(predictors.parameters())
    optimizer = torch.optim.AdamW(parameters, lr=config["lr"], betas=config["adamw_betas"],
                                  weight_decay=config["weight_decay"])
    scaler = runs.grad_scaler(device)                                       # fp16 only: runs.py
    step = runs.resume(config, model=model, ema=ema, target=target, predictors=predictors,
                       optimizer=optimizer, scaler=scaler, rng=generator)
    evaluations = runs.evaluation_steps(config["steps"], config["eval_every"])
    metrics = None
    progress = tqdm(range(step, config["steps"]), initial=step, total=config["steps"], desc=MODEL)
    for step in progress:
        batch, latents = training.batch(config["batch_size"], generator)  # fixed or fresh images
        values, present = data.conditioning(latents, config["cond"], config["cond_drop"], generator)
        for group in optimizer.param_groups:                            # warm-up, then the schedule
            group["lr"] = runs.learning_rate(config, step)
        with runs.autocast(device):                                         # bf16 or fp16 on a GPU
            cross_entropy, jepa = jepa_losses(model, target, predictors, batch, values, present,
                                              generator, config["jepa_layers"],
                                              config["label_smoothing"], config["mask_schedule"])
        loss = cross_entropy + config["jepa_weight"] * jepa
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)                                          # clip true gradients
        torch.nn.utils.clip_grad_norm_(parameters, config["clip_norm"])
        scaler.step(optimizer)
        scaler.update()
        decay = min(config["ema_decay"], (1 + step) / (10 + step))          # EMA with warm-up
        momentum = target_momentum(step, config["steps"], config["jepa_momentum"])
        with torch.no_grad():
            for p_ema, p_target, p in zip(ema.parameters(), target.parameters(),
                                          model.parameters()):
                p_ema.lerp_(p, 1 - decay)
                p_target.lerp_(p, 1 - momentum)                           # the target's only update
        readings = torch.stack([loss, cross_entropy, jepa]).cpu()       # the step's one wait
        loss, cross_entropy, jepa = readings.tolist()
        runs.check_finite(loss, step + 1, config["out"])
        progress.set_postfix(loss=f"{loss:.4f}", ce=f"{cross_entropy:.4f}", jepa=f"{jepa:.4f}")
        if step + 1 in evaluations:
            metrics = runs.evaluate(draw, ema, tokenizer, config, step + 1, loss,
                                    title=f"JEPA-MaskGIT ({config['cond']}, "
                                          f"{config['unmask']} unmasking)")
            progress.write(f"step {step + 1}: seen {100 * metrics['seen']:.1f} | level-1 "
                           f"{100 * metrics['level1']:.1f} | level-2 {100 * metrics['level2']:.1f}")
            runs.save_checkpoint(config["out"], model=model.state_dict(), ema=ema.state_dict(),
                                  target=target.state_dict(), predictors=predictors.state_dict(),
                                  optimizer=optimizer.state_dict(), scaler=scaler.state_dict(),
                                  step=step + 1, config=config, rng=generator.get_state())
    return metrics or runs.read_metrics(config["out"])[-1]


def main(argv=None):
    runs.run(MODEL, get_config(argv), train)


if __name__ == "__main__":
    main()
