"""Collect finished runs into a committed results folder: their pictures, final samples and
metrics, and tables of the three readings, means over seeds and the time to composition.

    python tools/rejudge.py runs/dit runs/dit-seed1 ...                      # if probe.py changed since
    python tools/collect.py --to results/default runs/dit runs/dit-seed1 ...
    python tools/collect.py --to results/default --clock runs/dit-alone runs/dit-alone runs/dit-seed1 ...

Runs that differ only in --seed (and --out) are one setting; its table row is the mean
(± std) over them. The time to composition is the first evaluation at which level-2's
composition reading reaches 50% and 90%, with the run's wall time at that evaluation, or,
with --clock, the wall time a run alone on the machine had at that step: runs that shared the
machine then compare at equal wall time.
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import data  # noqa: E402
import probe  # noqa: E402
import runs  # noqa: E402

READINGS = (("composed", "acc"), ("fidelity", "fidelity"), ("probe", "probe_acc"))
DEFAULTS = {   # every flag a setting is named by, at its default (not seed, out, resume, device)
    "steps": 2000, "batch_size": 64, "lr": 1e-3, "lr_schedule": "constant", "weight_decay": 0.0, "data": "fixed",
    "train_per_comp": 5000, "cond": "continuous", "cond_drop": 0.1, "eval_every": 250, "samples_per_comp": 32,
    "width": 128, "depth": 4, "heads": 4, "tokenizer": "pixels", "sample_steps": 10, "mask_schedule": "cosine",
    "label_smoothing": 0.0, "choice_temperature": 4.5, "jepa_weight": 0.6, "jepa_layers": [2, 3],
    "jepa_momentum": 0.996, "components": 8, "temperature": 1.0, "mixture_temperature": 1.0,
    "diffusion_steps": 25, "draws": 2, "time_dist": "logit-normal"}
OWN_DEFAULTS = {"maskgit": {"unmask": "confidence"}, "jepa_maskgit": {"unmask": "confidence"},
                "givt": {"unmask": "random"}, "dit": {"sample_steps": 25}}   # where a script differs


def setting(config):
    """'dit.py --cond dropout' for a run's config: the script and its flags that differ from
    the defaults the scripts print (seed, folder and device left out)."""
    defaults = {**DEFAULTS, **OWN_DEFAULTS.get(config["model"], {})}
    config = runs.with_flags_added_since(config)
    flags = [f"--{k.replace('_', '-')} {','.join(map(str, v)) if isinstance(v, list) else v}"
             for k, v in sorted(config.items()) if k in defaults and defaults[k] != v]
    name = " ".join([f"{config['model']}.py", *flags])
    return f"{name} (resampled)" if "resampled_from" in config else name   # tools/resample.py


def first_reaching(history, mark):
    """(step, minutes) of the first evaluation whose level-2 composition reading is >= mark."""
    for m in history:
        if m["level2"] >= mark:
            return m["step"], m.get("seconds", float("nan")) / 60
    return None


def mean_reaching(histories, mark):
    """The mean step (and wall time) over the seeds that reach the mark, and how many do."""
    reached = [r for r in (first_reaching(h, mark) for h in histories) if r]
    if not reached:
        return "not reached"
    steps, times = zip(*reached)
    return f"{np.mean(steps):.0f} ({minutes(np.mean(times))}), {len(reached)} of {len(histories)} seeds"


def minutes(value):
    return "not recorded" if value != value else f"{value:.1f} min"


def mean_std(values, scale=100):
    values = scale * np.asarray(values, dtype=float)
    return f"{values.mean():.1f}" if len(values) == 1 else f"{values.mean():.1f} ± {values.std():.1f}"


def draw(path, groups):
    """Level-1 (dashed) and level-2 (solid), composition reading, over training: mean over seeds."""
    plt = runs.pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (name, members), color in zip(groups.items(), plt.rcParams["axes.prop_cycle"].by_key()["color"] * 3):
        steps = sorted(set.intersection(*[{m["step"] for m in history} for _, _, history in members]))
        for split, style in (("level2", "-"), ("level1", "--")):
            mean = [100 * np.mean([next(m[split] for m in history if m["step"] == s) for _, _, history in members])
                    for s in steps]
            ax.plot(steps, mean, style, color=color, marker="o", markersize=3,
                    label=f"{name} ({len(members)} seed{'s' if len(members) > 1 else ''})" if split == "level2" else None)
    runs.log_step_axis(ax)
    ax.set_ylabel("composed (%): level-2 solid, level-1 dashed")
    ax.set_ylim(-3, 103)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--to", required=True, help="results folder to write (committed)")
    parser.add_argument("folders", nargs="+", help="run folders")
    parser.add_argument("--clock", help="a run that had the machine to itself: the wall times of the other runs of "
                        "its model are read off it at the same step (its recipes cost the same per step)")
    args = parser.parse_args(argv)
    os.makedirs(args.to, exist_ok=True)
    clock = {}
    if args.clock:
        model = json.load(open(os.path.join(args.clock, "config.json")))["model"]
        clock[model] = {m["step"]: m.get("seconds", float("nan")) for m in runs.read_metrics(args.clock)}
    groups = {}
    for folder in args.folders:
        history = runs.read_metrics(folder)
        if not history:
            raise SystemExit(f"error: {folder} has no metrics.jsonl")
        config = json.load(open(os.path.join(folder, "config.json")))
        if config["model"] in clock:
            history = [{**m, "seconds": clock[config["model"]].get(m["step"], float("nan"))} for m in history]
        name = os.path.basename(os.path.normpath(folder))
        kept = os.path.join(args.to, "runs", name)
        os.makedirs(kept, exist_ok=True)
        for file in ("metrics.jsonl", "config.json", "samples.npz"):
            shutil.copy(os.path.join(folder, file), os.path.join(kept, file))
        for picture in ("samples.png", "curves.png"):
            shutil.copy(os.path.join(folder, picture), os.path.join(args.to, f"{name}-{picture}"))
        groups.setdefault(setting(config), []).append((name, config, history))
    clock_flag = f"--clock {args.clock} " if args.clock else ""
    lines = [f"Written by `python tools/collect.py --to {args.to} {clock_flag}{' '.join(args.folders)}`, from each run's "
             "last evaluation (32 samples per composition unless the run says otherwise), judged by probe.py."
             + (f" Wall times of {', '.join(clock)} runs: `{args.clock}`'s at the same step." if clock else ""), "",
             "## The three readings (%): composed / fidelity / probe", "",
             "| setting | seeds | steps | wall time | seen | level-1 | level-2 | not legible | "
             + " | ".join(data.COMPOSITIONS) + " (composed) |",
             "|" + "---|" * 16]
    for name, members in groups.items():
        finals = [history[-1] for _, _, history in members]
        cells = []
        for split in ("seen", "level1", "level2"):
            cells.append(" / ".join(mean_std([probe.split_means(f[key])[split] for f in finals]) for _, key in READINGS))
        wall = [f.get("seconds", float("nan")) / 60 for f in finals]
        lines.append(f"| `{name}` | {', '.join(str(c['seed']) for _, c, _ in members)} | {finals[0]['step']} | "
                     f"{minutes(np.mean(wall))} | " + " | ".join(cells) + f" | {mean_std([f['malformed'] for f in finals])} | "
                     + " | ".join(mean_std([f['acc'][c] for f in finals]) for c in data.COMPOSITIONS) + " |")
    lines += ["", "## Time to composition: the first evaluation where level-2 (composed) reaches 50% and 90%", "",
              "| setting | seed | 50%: step (wall time) | 90%: step (wall time) | level-2 at the end |",
              "|---|---|---|---|---|"]
    for name, members in groups.items():
        if any("resampled_from" in config for _, config, _ in members):
            continue                                                # one evaluation: nothing to time
        for run_name, config, history in members:
            cells = []
            for mark in (0.5, 0.9):
                reached = first_reaching(history, mark)
                cells.append(f"{reached[0]} ({minutes(reached[1])})" if reached else f"not reached by step {history[-1]['step']}")
            lines.append(f"| `{name}` | {config['seed']} | {cells[0]} | {cells[1]} | {100 * history[-1]['level2']:.1f} |")
        if len(members) > 1:
            lines.append(f"| `{name}` | mean | " + " | ".join(mean_reaching([h for _, _, h in members], mark) for mark in (0.5, 0.9))
                         + f" | {mean_std([h[-1]['level2'] for _, _, h in members])} |")
    draw(os.path.join(args.to, "novel.png"), groups)
    lines += ["", "![level-1 and level-2 over training](novel.png)"]
    with open(os.path.join(args.to, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
