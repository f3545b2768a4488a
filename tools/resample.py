"""Sample a trained run again with other sampling settings: no retraining, a new run folder.

    python tools/resample.py runs/givt --out runs/resample/givt-T0 --set temperature=0
    python tools/resample.py runs/dit --out runs/resample/dit-S50 --set sample_steps=50

Loads the run's checkpoint (its EMA weights, as the run's own evaluations use them), changes
the named settings of its config, and calls the model file's own `evaluate` once, so the new
folder holds the same files as a run (metrics.jsonl with one line at the checkpoint's step,
samples, pictures) and `tools/collect.py` reads it like any other, as a setting marked
"(resampled)". Only settings that sampling reads may change, checked as the script checks its
flags; anything that shapes the network or its training is refused. Sampling is on the CPU
unless --device says otherwise; a run trained and sampled on a GPU is redrawn bit for bit
only there.
"""
import argparse
import json
import os
import sys


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import runs  # noqa: E402
from inside import load_trained  # noqa: E402

SAMPLING = {"dit": ("sample_steps",),
            "mar": ("sample_steps", "diffusion_steps", "temperature"),
            "givt": ("sample_steps", "unmask", "temperature", "mixture_temperature", "choice_temperature"),
            "maskgit": ("sample_steps", "unmask", "choice_temperature"),
            "jepa_maskgit": ("sample_steps", "unmask", "choice_temperature")}
ALLOWED = {"sample_steps": (int, lambda v: v >= 1, "a positive integer"),        # as the scripts' own checks
           "diffusion_steps": (int, lambda v: v >= 1, "a positive integer"),
           "temperature": (float, lambda v: v >= 0, "a number >= 0"),
           "mixture_temperature": (float, lambda v: v >= 0, "a number >= 0"),
           "choice_temperature": (float, lambda v: v >= 0, "a number >= 0"),
           "unmask": (str, lambda v: v in ("confidence", "random"), "confidence or random")}


def parse_settings(model, pairs):
    """['temperature=0', ...] -> {'temperature': 0.0}, each checked as the script checks its flag."""
    changes = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        key = key.replace("-", "_")
        if key not in SAMPLING[model]:
            raise SystemExit(f"error: --set {pair!r}: {model} samples with {', '.join(SAMPLING[model])}; "
                             f"{key!r} is not one of them")
        kind, valid, wanted = ALLOWED[key]
        try:
            value = kind(text)
        except ValueError:
            value = None
        if not equals or value is None or not valid(value):
            raise SystemExit(f"error: --set {pair!r}: {key} must be {wanted}")
        changes[key] = value
    return changes


def resample(run, out, changes, device="cpu"):
    """Evaluate the run's EMA once with `changes`, into `out`. Its metrics line records the run's loss
    and wall time at the checkpoint's step, plus the seconds this sampling took."""
    step, config, module, model, tokens = load_trained(run)
    config.update(parse_settings(config["model"], changes), out=out, device=device, resampled_from=run)
    os.makedirs(out, exist_ok=True)
    for name in ("metrics.jsonl", "ckpt.pt"):
        if os.path.exists(os.path.join(out, name)):
            raise SystemExit(f"error: {out} already holds {name}; choose a new --out")
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    before = [m for m in runs.read_metrics(run) if m["step"] == step]
    loss, seconds = (before[0]["loss"], before[0].get("seconds", 0.0)) if before else (float("nan"), 0.0)
    runs.start_clock(before=seconds)
    return module.evaluate(model.to(device), tokens, config, step, loss)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a run folder with ckpt.pt")
    parser.add_argument("--out", required=True, help="the new run folder")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a sampling setting to change (repeatable)")
    parser.add_argument("--device", default="cpu", choices=("auto", "cuda", "mps", "cpu"),
                        help="cpu by default: a run sampled on a GPU (bf16) is redrawn alike only there")
    args = parser.parse_args(argv)
    if not os.path.exists(os.path.join(args.run, "ckpt.pt")):
        parser.error(f"{args.run} holds no ckpt.pt")
    runs.report(resample(args.run, args.out, args.set, runs.resolve_device(args.device)))


if __name__ == "__main__":
    main()
