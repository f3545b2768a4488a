"""Judge a run's kept samples again, with judge.py as it stands.

    python tools/rejudge.py runs/dit runs/dit-seed1 ...          # a run folder: every evaluation
    python tools/rejudge.py results/ladder/runs/*                # a kept run: its last evaluation

A run folder keeps every evaluation's samples (samples/step_N.npz); a run kept under results/
only its last (samples.npz), so its earlier evaluations keep their composed and fidelity readings
and lose the probe's, which cannot be read again. The loss and wall times are kept.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import judge  # noqa: E402
import runs  # noqa: E402
import worlds  # noqa: E402

KEPT = ("loss", "seconds")                 # what a judge does not compute


def world_of(out):
    """The world a run learnt, from its config.json (data.py's Shapes2D unless --world set)."""
    path = os.path.join(out, "config.json")
    return worlds.world(json.load(open(path)) if os.path.exists(path) else {})


def rejudge(out):
    """Recompute the readings of a run's evaluations from its kept samples; returns the history."""
    old = runs.read_metrics(out)
    if not old:
        raise SystemExit(f"error: {out} holds no metrics.jsonl to rejudge")
    steps = [m["step"] for m in old]
    per_step = {s: os.path.join(out, "samples", f"step_{s}.npz") for s in steps}
    missing = [s for s in steps if not os.path.exists(per_step[s])]
    if missing and not os.path.exists(os.path.join(out, "samples.npz")):
        raise SystemExit(f"error: {out} has no kept samples for steps {missing}; run it again "
                         "to rejudge it")
    if missing:                                      # a kept run: its last evaluation only
        per_step = {steps[-1]: os.path.join(out, "samples.npz")}
    world = world_of(out)
    history = []
    for m in old:
        if m["step"] in per_step:
            saved = np.load(per_step[m["step"]])
            history.append(dict(step=m["step"], **{k: m[k] for k in KEPT if k in m},
                                **judge.evaluate(saved["images"], saved["factors"], world)))
        else:
            history.append({k: v for k, v in m.items() if k != "probe_acc"})
    temporary = os.path.join(out, "metrics.jsonl.tmp")
    with open(temporary, "w") as f:
        f.writelines(json.dumps(m) + "\n" for m in history)
    os.replace(temporary, os.path.join(out, "metrics.jsonl"))
    if not missing:
        title = os.path.basename(os.path.normpath(out))
        picture = runs.save_samples_png if world is runs.data else runs.save_grid_png
        picture(os.path.join(out, "samples.png"), saved["images"], saved["factors"],
                title=f"{title}, step {history[-1]['step']}", world=world)
        runs.save_curves_png(os.path.join(out, "curves.png"), history, title=title, world=world)
    return history


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", help="run folders, or runs kept under results/")
    for folder in parser.parse_args(argv).folders:
        last = rejudge(folder)[-1]
        print(f"{folder}: step {last['step']}: {runs.splits_line(last, world_of(folder))}")


if __name__ == "__main__":
    main()
