"""Sample a trained run again with other sampling settings: no retraining, a new run folder.

    python results/resample.py runs/givt --out runs/resample/givt-T0 --set temperature=0
    python results/resample.py runs/dit --out runs/resample/dit-S50 --set sample_steps=50

Loads the run's checkpoint (its EMA weights, as the run's own evaluations use them), changes
the named settings of its config, and calls the model file's own `evaluate` once, so the new
folder holds the same files as a run (metrics.jsonl with one line at the checkpoint's step,
samples, pictures) and `results/collect.py` reads it like any other. Only settings that
sampling reads may change; anything that shapes the network or its training is refused.
"""
import argparse
import importlib
import json
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import data  # noqa: E402
import runs  # noqa: E402

SAMPLING = {"dit": ("sample_steps",),
            "mar": ("sample_steps", "diffusion_steps", "temperature"),
            "givt": ("sample_steps", "unmask", "temperature", "mixture_temperature", "choice_temperature"),
            "maskgit": ("sample_steps", "unmask", "choice_temperature"),
            "jepa_maskgit": ("sample_steps", "unmask", "choice_temperature")}


def build(config):
    """The model file, an empty EMA network shaped as the run's, and its tokenizer."""
    module = importlib.import_module(config["model"])
    shape = (config["width"], config["depth"], config["heads"])
    if config["model"] in ("maskgit", "jepa_maskgit"):
        tokens = data.load_tokenizer("codebook")
        return importlib.import_module("maskgit"), module.MaskGIT(tokens.vocab_size, *shape), tokens
    tokens = module.Tokens(config["tokenizer"])
    if config["model"] == "givt":
        return module, module.GIVT(tokens.dim, config["components"], *shape), tokens
    network = module.DiT if config["model"] == "dit" else module.MAR
    return module, network(tokens.dim, *shape), tokens


def parse_settings(model, pairs, config):
    """['temperature=0', ...] -> {'temperature': 0.0}, typed as the run's own value."""
    changes = {}
    for pair in pairs:
        key, _, text = pair.partition("=")
        key = key.replace("-", "_")
        if key not in SAMPLING[model]:
            raise SystemExit(f"error: --set {pair!r}: {model} samples with {', '.join(SAMPLING[model])}; "
                             f"{key!r} is not one of them")
        changes[key] = type(config[key])(text)
    return changes


def resample(run, out, changes):
    state = torch.load(os.path.join(run, "ckpt.pt"), map_location="cpu", weights_only=True)
    config = runs.with_flags_added_since(state["config"])
    module, model, tokens = build(config)
    model.load_state_dict(state["ema"])
    config.update(changes, out=out, device="cpu", resampled_from=run)
    os.makedirs(out, exist_ok=True)
    for name in ("metrics.jsonl", "ckpt.pt"):
        if os.path.exists(os.path.join(out, name)):
            raise SystemExit(f"error: {out} already holds {name}; choose a new --out")
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    before = [m for m in runs.read_metrics(run) if m["step"] == state["step"]]
    loss, seconds = (before[0]["loss"], before[0].get("seconds", 0.0)) if before else (float("nan"), 0.0)
    runs.start_clock(before=seconds)                       # the run's own time to this step, then sampling
    return module.evaluate(model, tokens, config, state["step"], loss)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a run folder with ckpt.pt")
    parser.add_argument("--out", required=True, help="the new run folder")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a sampling setting to change (repeatable)")
    args = parser.parse_args(argv)
    if not os.path.exists(os.path.join(args.run, "ckpt.pt")):
        parser.error(f"{args.run} holds no ckpt.pt")
    config = runs.with_flags_added_since(
        torch.load(os.path.join(args.run, "ckpt.pt"), map_location="cpu", weights_only=True)["config"])
    runs.report(resample(args.run, args.out, parse_settings(config["model"], args.set, config)))


if __name__ == "__main__":
    main()
