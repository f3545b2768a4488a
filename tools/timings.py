"""Where a default run's time goes: start-up, a training step, and each part of an evaluation.

    python tools/timings.py                      # every generator, 40 steps and one evaluation each
    python tools/timings.py dit mar --steps 60   # some of them

Each generator runs its own main with timers around what a run calls: the training data (render
and tokenize), its draw (sampling and decoding), the judge, the pictures, the kept samples, the
checkpoint. A step is the rest divided by N (warm-up included); a default run is estimated as
start-up + steps x step + evaluations x evaluation. Run it alone on the machine: it measures
wall time.
"""
import argparse
import collections
import contextlib
import functools
import io
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import numpy as np  # noqa: E402

import data  # noqa: E402
import judge  # noqa: E402
import runs  # noqa: E402

PARTS = ("training data", "sampling", "judge", "pictures", "kept samples", "checkpoint")


def timed(owner, name, part, clock):
    """Replace owner.name by a wrapper that adds its wall time to clock[part]."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            clock[part] = clock.get(part, 0.0) + time.perf_counter() - start

    setattr(owner, name, wrapper)
    return owner, name, original


def profile(model, steps):
    """{part: seconds} for one run of `steps` steps
    and one evaluation, and the default run's shape."""
    module = runs.script(model)
    clock = {}
    patches = [timed(data.TrainingData, "__init__", "training data", clock),
               timed(module, "draw", "sampling", clock),
               timed(module if hasattr(module, "evaluate") else runs, "evaluate", "evaluation",
                     clock),
               timed(judge, "evaluate", "judge", clock),
               timed(runs, "save_samples_png", "pictures", clock),
               timed(runs, "save_curves_png", "pictures", clock),
               timed(np, "savez_compressed", "kept samples", clock),
               timed(runs, "save_checkpoint", "checkpoint", clock)]
    judge.instruments()                             # the judge's one-off set-up is not a run's cost
    try:
        with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            start = time.perf_counter()
            module.main(["--steps", str(steps), "--eval-every", str(steps), "--out",
                         os.path.join(folder, "run"), "--device", "cpu"])
            clock["total"] = time.perf_counter() - start
            defaults = vars(module.parse([])[1])
    finally:
        for owner, name, original in patches:
            setattr(owner, name, original)
    clock = collections.defaultdict(float, clock)  # objects.py: no training set, no judge.evaluate
    clock["record"] = clock["evaluation"] - clock["sampling"]     # its judge, pictures, npz files
    clock["the rest"] = clock["record"] - clock["judge"] - clock["pictures"] - clock["kept samples"]
    clock["step"] = (clock["total"] - clock["training data"] - clock["evaluation"]
                     - clock["checkpoint"]) / steps
    clock["one evaluation"] = clock["evaluation"] + clock["checkpoint"]
    evaluations = len(runs.evaluation_steps(defaults["steps"], defaults["eval_every"]))
    clock["default run"] = (clock["training data"] + defaults["steps"] * clock["step"]
                            + evaluations * clock["one evaluation"])
    return clock, defaults["steps"], evaluations


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", default=list(runs.MODELS),
                        help=f"some of {', '.join(runs.MODELS)}")
    parser.add_argument("--steps", type=int, default=40,
                        help="training steps to time (then one evaluation)")
    args = parser.parse_args(argv)
    unknown = [m for m in args.models if m not in runs.MODELS]
    if unknown:
        parser.error(f"unknown generator {unknown[0]!r}; choose from {', '.join(runs.MODELS)}")
    if args.steps < 2:
        parser.error(f"--steps must be at least 2, got {args.steps}")
    columns = ("training data", "step", "sampling", "the rest", "judge", "pictures", "kept samples",
               "checkpoint", "one evaluation", "default run")
    print("| model | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for model in args.models:
        clock, steps, evaluations = profile(model, args.steps)
        cells = [f"{clock[c]:.2f} s" if c != "default run" else f"{clock[c] / 60:.1f} min"
                 for c in columns]
        cells[-1] += f" ({steps} steps, {evaluations} evaluations)"
        print(f"| `{model}.py` | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
