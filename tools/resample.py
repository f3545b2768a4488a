"""Sample a trained run again with other sampling settings: no retraining, a new run folder.

    python tools/resample.py runs/givt --out runs/resample/givt-T0 --set temperature=0
    python tools/resample.py runs/dit --out runs/resample/dit-S50 --set sample_steps=50

Loads the run's checkpoint (its EMA weights, as the run's own evaluations use them), changes
the named settings of its config, and draws with the model file's own `draw` once, as its
evaluations do, so the new folder holds the same files as a run (metrics.jsonl with one line
at the checkpoint's step, samples, pictures) and `tools/collect.py` reads it like any other, as
a setting marked "(resampled)". Only settings that sampling reads may change, checked as the
script checks its flags; anything that shapes the network or its training is refused. Sampling
is on the CPU unless --device says otherwise; a run trained and sampled on a GPU is redrawn bit
for bit only there. The new config.json records the trained run's provenance and, as
resample_provenance, the sampling's own.
"""
import argparse
import contextlib
import io
import json
import os
import sys


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import runs  # noqa: E402
import worlds  # noqa: E402
from studies.inside import load_trained  # noqa: E402


def parse_settings(module, pairs):
    """['temperature=0', ...] -> {'temperature': 0.0}: each key one of the settings the generator's
    sampling reads (its SAMPLING), each value read and checked by the generator's own parser."""
    changes = {}
    for pair in pairs:
        key, _, text = pair.partition("=")
        key = key.replace("-", "_")
        if key not in module.SAMPLING:
            raise SystemExit(f"error: --set {pair!r}: {module.NAME} samples with "
                             f"{', '.join(module.SAMPLING)}; "
                             f"{key!r} is not one of them")
        said = io.StringIO()
        try:
            with contextlib.redirect_stderr(said):
                parser, args = module.parse([f"--{key.replace('_', '-')}", text])
                runs.check_values(parser, args)
        except SystemExit:
            raise SystemExit(f"error: --set {pair!r}: "
                             f"{said.getvalue().strip().splitlines()[-1].split('error: ')[-1]}")
        changes[key] = getattr(args, key)
    return changes


def resample(run, out, changes, device="cpu"):
    """Evaluate the run's EMA once with `changes`, into `out`. Its metrics line records the run's
    loss and wall time at the checkpoint's step, plus the seconds this sampling took."""
    step, config, module, model, tokenizer = load_trained(run)
    with open(os.path.join(run, "config.json")) as f:     # the checkpoint's config holds none
        trained = json.load(f).get("provenance")
    config.update(parse_settings(module, changes), out=out, device=device, resampled_from=run,
                  provenance=trained, resample_provenance=runs.provenance(device))
    os.makedirs(out, exist_ok=True)
    for name in ("metrics.jsonl", "ckpt.pt"):
        if os.path.exists(os.path.join(out, name)):
            raise SystemExit(f"error: {out} already holds {name}; choose a new --out")
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    before = [m for m in runs.read_metrics(run) if m["step"] == step]
    loss, seconds = (before[0]["loss"], before[0].get("seconds", 0.0)) if before else (None, 0.0)
    runs.start_clock(config, before=seconds)
    return runs.draw_and_read(module.draw, model.to(device), tokenizer, config, step, loss)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a run folder with ckpt.pt")
    parser.add_argument("--out", required=True, help="the new run folder")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a sampling setting to change (repeatable)")
    parser.add_argument("--device", default="cpu", choices=("auto", "cuda", "mps", "cpu"),
                        help="cpu by default: a run sampled on a GPU (bf16) is redrawn "
                             "alike only there")
    args = parser.parse_args(argv)
    if not os.path.exists(os.path.join(args.run, "ckpt.pt")):
        parser.error(f"{args.run} holds no ckpt.pt")
    metrics = resample(args.run, args.out, args.set, runs.resolve_device(args.device))
    with open(os.path.join(args.out, "config.json")) as f:
        runs.report(metrics, worlds.world(json.load(f)))     # the run's own world and codes


if __name__ == "__main__":
    main()
