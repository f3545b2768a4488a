"""A results folder from run folders: the runs' files kept, the tables and pictures rebuilt from
them.

    python tools/collect.py results/ladder --add runs/dit runs/dit-seed1 ...   # keep, then rebuild
    python tools/collect.py results/ladder                      # rebuild from what is kept
    python tools/collect.py results/ladder --clock dit-alone    # wall times off a lone run

--add copies each run's config.json, metrics.jsonl and final samples (samples.npz) into
results/<question>/runs/<name>/. Everything else is rebuilt from those kept files alone, so
the command written at the top of table.md rebuilds it byte for byte (a test checks): each
run's grid (runs/<name>/samples.png), novel.png (level-1 and level-2 over training, the mean
over seeds) and table.md. Where runs of LONG steps or more trained with the long-budget recipe
(LONG_RECIPE; results/long-runs), also their time course: time-course.png, and each seed's peak
and end in table.md.

Runs that differ only in --seed (and --out) are one setting; its row is the mean ± std over
them (std over seeds, numpy's default: divided by n). The time to composition is the first
evaluation at which level-2's composition reading reaches 50% and 90%. Runs that shared the
machine compare by steps; --clock NAME gives the wall times a run alone on the machine (a
kept run of that name) had at the same step, for every run of its model. Every row names the
commit its runs' code was at (config.json's provenance), or says "not recorded".
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import data
import judge
import runs
import worlds

READINGS = (("composed", "acc"), ("fidelity", "fidelity"), ("probe", "probe_acc"))
# The long-budget recipe the DiT controls chose (results/long-runs/README.md): the rate decayed to
# 0 over the run. A run of results/long-runs trained with it is on the time course; the rest are
# controls.
LONG_RECIPE, LONG = {"lr_schedule": "cosine"}, 10000       # the recipe, from this many steps
COURSE = (("level2", "level-2 composed (%)"), ("probe_111", "111 on the study's probe (%)"))
LADDER = runs.MODELS                                                # rows in this order
# The paper's Shapes2D figures where it gives them (probe readings, seen / level-1 / level-2, %),
# arXiv 2510.03075: the one place they are written; the tables set them beside their setting.
PAPER = {
    "maskgit.py": "85.6 / 52.4 / 0.7 (Table 4)",
    "jepa_maskgit.py": "above MaskGIT (Fig. 6b)",
    "givt.py": "level-2 about 50–85 (curves)",
    "mar.py": "level-2 about 75–94 (curves)",
    "dit.py": "97.3 / 99.0 / 96.9 (Table 4)",
    "dit.py --cond dropout": "level-2 peaks near 39, then collapses (Fig. 4)",
    "dit.py --cond discrete": "level-2 35–92, about 53 at the end (Fig. 4)",
    "dit.py --cond discrete-dropout": "level-2 about 0 (Fig. 4)",
    "dit.py --cond text": "74.2 / 71.4 / 48.4 (Table 4, a pretrained text encoder)",
    "dit.py --cond text-partial": "76.6 / 62.5 / 1.6 (Table 4, partial descriptions)",
    "maskgit.py --cond text": "84.1 / 52.0 / 1.6 (Table 4, a pretrained text encoder)",
    "maskgit.py --cond text-partial": "85.2 / 19.9 / 0.3 (Table 4, partial descriptions)",
    "maskgit.py --unmask random": "85.8 / 28.8 novel, against 85.6 / 39.5 by confidence (Table 3)",
    "ar.py": "86.7 / 38.5 / 6.2 (Table 2)",
    "ar.py --head gmm": "90.2 / 64.1 / 46.9 (Table 2, tokenizer not stated)",
    "ar.py --head gmm --tokenizer codebook": "90.2 / 64.1 / 46.9 (Table 2, tokenizer not stated)",
    "objects.py": "succeeds, 0-10 asked (2509.16447, Fig. 1; by eye)",
    "objects.py --cond one": "fails (2509.16447; by eye)",
    "objects.py --cond one --locality local": "succeeds again (2509.16447; by eye)",
    "objects.py --cond one --locality patch": "succeeds again (2509.16447; by eye)",
}
NOT_A_SETTING = ("seed", "out", "resume", "device", "keep_checkpoints", "compile")
RETIRED = {"label_smoothing": 0.0, "factored_head": False}   # flags of the code of kept runs, at
# the value they had unset: a kept run that set one shows it in its command, as it was run
NOT_RECORDED = "not recorded"                       # a run whose config.json holds no provenance


def read_json(path):
    with open(path) as f:
        return json.load(f)


def defaults(model, argv=()):
    """What `python <model>.py ARGV` runs: every flag at the value its own parser gives it."""
    _, args = runs.script(model).parse(list(argv))
    return {k: v for k, v in vars(args).items() if k not in NOT_A_SETTING}


def setting(config):
    """'dit.py --cond dropout' for a run's config: the script and the fewest flags whose command
    gives its settings (ar.py's tokenizer follows its head), seed, folder and device left out."""
    def value(k):
        if config[k] is True:
            return [f"--{k.replace('_', '-')}"]
        shown = ",".join(map(str, config[k])) if isinstance(config[k], list) else str(config[k])
        return [f"--{k.replace('_', '-')}", shown]

    def moved(flags):
        """The settings the command with these flags gets wrong, in name order."""
        argv = [word for k in flags for word in value(k)]
        given = defaults(config["model"], argv)
        return [k for k, v in sorted(given.items()) if config.get(k, v) != v]
    flags = ["world"] if config.get("world", data.NAME) != data.NAME else []   # it sets defaults
    # then one flag at a time, until the command gives them all
    while wrong := moved(flags):
        flags = sorted(flags + wrong[:1])
    flags = sorted(flags + [k for k, unset in RETIRED.items() if config.get(k, unset) != unset])
    name = " ".join([f"{config['model']}.py", *(" ".join(value(k)) for k in flags)])
    return f"{name} (resampled)" if "resampled_from" in config else name   # tools/resample.py


def commit(config):
    """The commit a run's code was at, short ('58b7623'), from its config.json's provenance."""
    recorded = config.get("provenance")
    if not recorded:
        return NOT_RECORDED
    short = recorded["commit"][:7]
    return f"{short} (uncommitted changes)" if recorded.get("uncommitted_changes") else short


def commits(members):
    """The commit of a setting's runs ('58b7623'), or each with its seeds where they differ:
    '3237423 (seed 0), 58b7623 (seeds 1, 2)'."""
    seeds = {}                                                  # commit -> its seeds, in order
    for _, config, _ in members:
        seeds.setdefault(commit(config), []).append(str(config["seed"]))
    if len(seeds) == 1:
        return next(iter(seeds))
    return ", ".join(f"{code} (seed{'s' * (len(s) > 1)} {', '.join(s)})"
                     for code, s in seeds.items())


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
    time = "" if np.isnan(times).any() else f" ({minutes(np.mean(times))})"
    return f"{np.mean(steps):.0f}{time}, {len(reached)} of {len(histories)} seeds"


def minutes(value):
    return "-" if np.isnan(value) else f"{value:.1f} min"


def mean_std(values, scale=100, digits=1):
    """'12.3 ± 4.5' over seeds (std divided by n), '12.3' for one; missing values left out, '-'
    for none."""
    values = [v for v in values if v is not None and not np.isnan(v)]
    if not values:
        return "-"
    values = scale * np.asarray(values, dtype=float)
    mean = f"{values.mean():.{digits}f}"
    return mean if len(values) == 1 else f"{mean} ± {values.std():.{digits}f}"


def add(folder, sources):
    """Keep each run's config, metrics and final samples under folder/runs/<name>/."""
    kept_files = ("config.json", "metrics.jsonl", "samples.npz")
    for source in sources:
        missing = [f for f in kept_files if not os.path.exists(os.path.join(source, f))]
        if missing:
            raise SystemExit(f"error: {source} is not a finished run (no {missing[0]})")
        kept = os.path.join(folder, "runs", os.path.basename(os.path.normpath(source)))
        os.makedirs(kept, exist_ok=True)
        for name in kept_files:
            shutil.copy(os.path.join(source, name), os.path.join(kept, name))


def load(folder, clock):
    """{setting: [(name, config, history)]}, settings in ladder order, seeds in order."""
    root = os.path.join(folder, "runs")
    names = sorted(os.listdir(root)) if os.path.isdir(root) else []
    if not names:
        raise SystemExit(f"error: {root} holds no runs; add some with --add RUN ...")
    seconds = {}
    if clock:
        if clock not in names:
            raise SystemExit(f"error: --clock {clock}: no run of that name in {root}")
        model = read_json(os.path.join(root, clock, "config.json"))["model"]
        seconds[model] = {m["step"]: m.get("seconds", float("nan"))
                          for m in runs.read_metrics(os.path.join(root, clock))}
    members = []
    for name in names:
        if not os.path.exists(os.path.join(root, name, "samples.npz")):    # not evaluated yet
            continue
        config = read_json(os.path.join(root, name, "config.json"))
        history = runs.read_metrics(os.path.join(root, name))
        alone = seconds.get(config["model"], {})     # shared the machine: steps only (no seconds)
        history = [{**m, "seconds": alone.get(m["step"], float("nan"))} for m in history]
        members.append((name, config, history))

    def order(member):
        model = member[1]["model"]
        rank = LADDER.index(model) if model in LADDER else len(LADDER)
        return rank, setting(member[1]) != f"{model}.py", setting(member[1]), member[1]["seed"]
    groups = {}
    for member in sorted(members, key=order):
        groups.setdefault(setting(member[1]), []).append(member)
    return groups


def reading_at(history, key, step):
    return next(m[key] for m in history if m["step"] == step)


def plot_curves(path, groups, panels=(((("level2", "-"), ("level1", "--")),
                                        "composed (%): level-2 solid, level-1 dashed"),)):
    """Readings over training, mean over seeds: one panel per (curves, label); by default
    level-2 (solid) and level-1 (dashed) composed."""
    plt = runs.pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 4.2), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"] * 3
    for ax, (curves, label) in zip(axes[0], panels):
        for (name, members), color in zip(groups.items(), colors):
            steps = sorted(set.intersection(*[{m["step"] for m in history}
                                              for _, _, history in members]))
            for split, style in curves:
                mean = [100 * np.mean([reading_at(history, split, s) for _, _, history in members])
                        for s in steps]
                seeds = f"{len(members)} seed{'s' if len(members) > 1 else ''}"
                ax.plot(steps, mean, style, color=color, marker="o", markersize=3,
                        label=f"{name} ({seeds})" if style == "-" else None)
        runs.log_step_axis(ax)
        ax.set_ylabel(label)
        ax.set_ylim(-3, 103)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def seeds_of(members):
    return ", ".join(str(config["seed"]) for _, config, _ in members)


def table(groups, command):
    paper = any(name in PAPER for name in groups)
    head = (f"Rebuilt by `{command}` from the kept runs (`runs/`), each at its last evaluation, "
            "judged by probe.py (32 samples per composition unless the run says otherwise); "
            "mean ± std over seeds.")
    lines = [head, "",
             "## The three readings (%): composed / fidelity / probe", "",
             "| setting | seeds | steps | seen | level-1 | level-2 | not legible | "
             + " | ".join(data.COMPOSITIONS) + " (composed) |"
             + " the paper (probe) |" * paper + " commit |",
             "|" + "---|" * (16 + paper)]
    for name, members in groups.items():
        finals = [history[-1] for _, _, history in members]
        cells = [" / ".join(mean_std([judge.split_means(f[key])[split] for f in finals])
                            for _, key in READINGS)
                 for split in ("seen", "level1", "level2")]
        cells.append(mean_std([f["malformed"] for f in finals]))
        cells += [mean_std([f["acc"][c] for f in finals]) for c in data.COMPOSITIONS]
        cells += [PAPER.get(name, "")] * paper + [commits(members)]
        lines.append(f"| `{name}` | {seeds_of(members)} | {finals[0]['step']} | "
                     + " | ".join(cells) + " |")
    lines += ["", ("## Time to composition: the first evaluation where level-2 (composed) "
                   "reaches 50% and 90%"), "",
              ("| setting | seed | 50%: step (wall time alone) | 90%: step (wall time alone) "
               "| level-2 at the end | grid | commit |"),
              "|---|---|---|---|---|---|---|"]
    for name, members in groups.items():
        for run_name, config, history in members:
            cells = []
            for mark in (0.5, 0.9):
                reached = first_reaching(history, mark)
                if not reached:
                    cells.append(f"not by step {history[-1]['step']}")
                elif np.isnan(reached[1]):
                    cells.append(str(reached[0]))
                else:
                    cells.append(f"{reached[0]} ({minutes(reached[1])})")
            lines.append(f"| `{name}` | {config['seed']} | {cells[0]} | {cells[1]} "
                         f"| {100 * history[-1]['level2']:.1f} "
                         f"| [samples](runs/{run_name}/samples.png) | {commit(config)} |")
        if len(members) > 1:
            histories = [h for _, _, h in members]
            lines.append(f"| `{name}` | mean | "
                         + " | ".join(mean_reaching(histories, mark) for mark in (0.5, 0.9))
                         + f" | {mean_std([h[-1]['level2'] for h in histories])} | "
                         f"| {commits(members)} |")
    lines += ["", "![level-1 and level-2 over training](novel.png)"]
    return "\n".join(lines) + "\n"


def objects_table(groups, command):
    """objects.py's runs: drawn exactly as asked (the headline) by the number asked, the asked
    locations found beside it; found and extra at the most asked; the two locality readings."""
    finals = {name: [history[-1] for _, _, history in members] for name, members in groups.items()}
    asked = sorted({int(n) for fs in finals.values() for f in fs for n in f["exact"]})
    # the spans read the numbers every kept run asked, so no mean mixes 4-8 with 4-10
    common = sorted(set.intersection(*({int(n) for n in f["exact"]}
                                       for fs in finals.values() for f in fs)))
    beyond, most, times = [n for n in common if n > 3], str(max(common)), ("0.2", "0.5", "0.8")
    span = f"{beyond[0]}-{beyond[-1]}"

    def over(f, key, more):
        """A run's reading (exact or found) over 1-3 asked or over the common 4 and more; each
        number is asked equally often, so the mean of the numbers' shares is the samples' share."""
        return np.mean([f[key][str(n)] for n in common if n > 0 and (n > 3) == more])
    lines = [(f"Rebuilt by `{command}` from the kept runs (`runs/`), each at its last evaluation; "
              "mean ± std over seeds."), "",
             ("## Drawn exactly as asked (%), by the number of objects asked "
              "(training shows 1 to 3)"), "",
             ("Exact: exactly the asked discs, each at its location (the headline); found: the "
              "share of asked locations with a disc. Locality: the share of a moved location's "
              "change within 6 px, and within the patch arm's reach (objects.REACH_RADIUS, 11.1 "
              "px); pixel locality: the share of an untold object's gradient within 6 px "
              "(objects.py)."), "",
             "| setting | seeds | steps | " + " | ".join(map(str, asked))
             + f" | 1-3 exact / found | {span} exact / found | {most} asked: found (%) / extra "
             "| locality (%) at t = 0.2 / 0.5 / 0.8 | within reach (%) at t = 0.2 / 0.5 / 0.8 "
             "| pixel locality (%) at t = 0.2 / 0.5 / 0.8 | the paper | commit |",
             "|" + "---|" * (len(asked) + 11)]
    for name, members in groups.items():
        fs = finals[name]

        def cell(key, t, fs=fs):
            return mean_std([f.get(key, {}).get(t) for f in fs], 100, 0)
        exact = [mean_std([f["exact"].get(str(n)) for f in fs]) for n in asked]
        pairs = [f"{mean_std([over(f, 'exact', more) for f in fs])} / "
                 f"{mean_std([over(f, 'found', more) for f in fs])}" for more in (False, True)]
        at_most = (f"{mean_std([f['found'].get(most) for f in fs])} / "
                   f"{mean_std([f['extra'].get(most) for f in fs], 1)}")
        readings = [" / ".join(cell(key, t) for t in times)
                    for key in ("locality", "locality_within_reach", "pixel_locality")]
        seeds = ", ".join(str(c["seed"]) for _, c, _ in members)
        lines.append(" | ".join([f"| `{name}`", seeds, str(fs[0]["step"]), *exact, *pairs, at_most,
                                 *readings, PAPER.get(name, ""), f"{commits(members)} |"]))
    lines += ["", *over_training(groups, common)]
    grids = [f"[{n}](runs/{n}/samples.png)" for m in groups.values() for n, _, _ in m]
    lines += ["", "Grids: " + ", ".join(grids),
              "", (f"![exact (left) and found (right), 1-3 asked (dashed) and {span} (solid), "
                   "over training](novel.png)")]
    return "\n".join(lines) + "\n"


def over_training(groups, common):
    """Each seed's reading at every evaluation: exact beside found and the extra discs per sample,
    which exact counts against a model and found does not (a model told one location of an image
    that holds 1-3 discs learns to add discs nobody named)."""
    beyond = [n for n in common if n > 3]
    spans = {"1-3": [n for n in common if 0 < n <= 3], f"{beyond[0]}-{beyond[-1]}": beyond}
    lines = ["## Over training: each seed's exact / found (%) and extra discs per sample", "",
             ("Seeds in order, separated by /; found does not count the discs nobody asked for, "
              "extra counts them (the mean over the numbers asked, each asked equally often)."),
             "", "| setting | step | " + " | ".join(f"{span} asked: {what}" for span in spans
                                                   for what in ("exact", "found", "extra")) + " |",
             "|" + "---|" * (2 + 3 * len(spans))]
    for name, members in groups.items():
        steps = sorted(set.intersection(*[{m["step"] for m in history}
                                          for _, _, history in members]))
        for step in steps:
            at = [next(m for m in history if m["step"] == step) for _, _, history in members]
            cells = []
            for numbers in spans.values():
                for key, scale, digits in (("exact", 100, 1), ("found", 100, 1), ("extra", 1, 2)):
                    cells.append(" / ".join(
                        f"{scale * np.mean([m[key][str(n)] for n in numbers]):.{digits}f}"
                        for m in at))
            lines.append(f"| `{name}` | {step} | " + " | ".join(cells) + " |")
    return lines


# The front page's names for the ladder's rows: the model, its file, its objective and the
# paper's probe reading of `111` (Table 4, or the range its curves show).
FRONT_PAGE = {
    "maskgit.py": ("MaskGIT", "categorical: cross-entropy over codebook ids", "0.7 (Table 4)"),
    "jepa_maskgit.py": ("JEPA-MaskGIT", "categorical, plus latent prediction",
                        "above MaskGIT's (Fig. 6b)"),
    "givt.py": ("GIVT", "continuous: Gaussian-mixture likelihood of patches",
                "about 50–85 (curves)"),
    "mar.py": ("MAR", "continuous: diffusion of each hidden patch", "about 75–94 (curves)"),
    "dit.py": ("DiT", "continuous: diffusion of all patches", "96.9 (Table 4)"),
}


def summary(groups):
    """The front page's rows: per ladder model, seen composed, `111` composed and `111` on the
    study's probe, each the mean over its seeds, and the paper's probe reading of `111`."""
    rows = []
    for name, members in groups.items():
        if name not in FRONT_PAGE:
            continue
        model, objective, paper = FRONT_PAGE[name]
        finals = [history[-1] for _, _, history in members]
        seen = np.mean([judge.split_means(f["acc"])["seen"] for f in finals])
        composed = np.mean([f["acc"]["111"] for f in finals])
        probe = np.mean([f["probe_acc"]["111"] for f in finals])
        rows.append(f"| {model} (`{name}`) | {objective} | {100 * seen:.1f} | "
                    f"{100 * composed:.1f} | {100 * probe:.1f} | {paper} |")
    return rows


def of_objects(groups):
    """Whether the runs are objects.py's (another world, another table)."""
    return all(config["model"] == "objects"
               for members in groups.values() for _, config, _ in members)


def text(groups, command, reach=None):
    """table.md: objects.py's table for its runs, the three readings' for the rest; and the time
    course of the long runs of the recipe."""
    if world_of(groups) is not data:
        return world_table(groups, command, world_of(groups), reach or {})
    course = on_course(groups)
    written = (objects_table if of_objects(groups) else table)(groups, command)
    return written + (time_course_table(course) if course else "")


def world_of(groups):
    """The world the runs of a results folder learnt (data.py's Shapes2D unless --world said)."""
    return worlds.world(next(iter(groups.values()))[0][1].get("world", data.NAME))


def write(folder, clock=None, command=None):
    """Rebuild a results folder from its kept runs: each run's grid, novel.png and table.md."""
    groups = load(folder, clock)
    objects, world = of_objects(groups), world_of(groups)
    for members in groups.values():
        for name, config, history in members:
            kept = os.path.join(folder, "runs", name)
            saved = np.load(os.path.join(kept, "samples.npz"))
            title = f"{name}: {setting(config)}, step {history[-1]['step']}"
            grid = os.path.join(kept, "samples.png")
            if objects:
                runs.script("objects").save_grid(grid, saved["images"], saved["counts"],
                                                    saved["points"], title)
            elif world is not data:
                runs.save_grid_png(grid, saved["images"], saved["factors"], title, world)
            else:
                runs.save_samples_png(grid, saved["images"], saved["factors"], title=title)
    if objects:
        plot_curves(os.path.join(folder, "novel.png"), groups,
                    (((("beyond", "-"), ("trained", "--")),
                      "exact (%): 4 or more asked solid, 1-3 dashed"),
                     ((("found_beyond", "-"), ("found_trained", "--")),
                      "found (%), extra discs not counted")))
    else:
        plot_curves(os.path.join(folder, "novel.png"), groups)
    inside = os.path.relpath(os.path.abspath(folder), os.path.dirname(data.__file__))
    where = (inside if not inside.startswith("..")                       # the same from any copy
             else "results/" + os.path.basename(os.path.normpath(folder)))
    clocked = ["--clock", clock] if clock else []
    command = command or " ".join(["python tools/collect.py", where, *clocked])
    if on_course(groups):
        plot_time_course(os.path.join(folder, "time-course.png"), on_course(groups))
    if world is not data:                                  # the real renders, beside the grids
        images, bits, _ = world.make_dataset(world.COMPOSITIONS, 1, REAL_SEED)
        runs.save_grid_png(os.path.join(folder, "real.png"), images, bits,
                           f"{world.NAME}: real renders, one of each composition", world)
        if hasattr(world, "frames_of"):                   # a clip world: watch the novel clips
            shown = []
            for members in groups.values():
                name = members[0][0]                                       # its first seed
                saved = np.load(os.path.join(folder, "runs", name, "samples.npz"))
                save_clips(os.path.join(folder, "runs", name), saved["images"], saved["factors"],
                           world, f"{name}: {setting(members[0][1])}")
                shown.append((name, saved["images"], saved["factors"]))
            save_models_strip(os.path.join(folder, "strip.png"), shown, world)
        if seen_sweep(groups, world):
            plot_seen_sweep(os.path.join(folder, "diversity.png"), seen_sweep(groups, world),
                            reach_of(folder))
    written = text(groups, command, reach_of(folder))
    with open(os.path.join(folder, "table.md"), "w") as f:
        f.write(written)
    return groups, written


# ------------------------------------------------------------------ a world of many compositions
REAL_SEED = 7                                       # the real renders set beside the runs' grids


def world_table(groups, command, world, reach):
    """table.md for runs in a world of many compositions: per setting and group of the world
    (world.GROUPS), composed and probe at the last evaluation (mean ± std over seeds, and each
    seed), and the commonest substitution among its legible samples that are not what was asked.
    """
    head = (f"Rebuilt by `{command}` from the kept runs (`runs/`), each at its last evaluation; "
            f"world `{world.NAME}`; mean ± std over seeds, then each seed's value. Samples per "
            "composition: the runs' `--samples-per-comp` for every novel one, an eighth of it "
            "(at least one) for every seen one.")
    lines = [head, "", "## Composed and the study's probe (%), by group", "",
             "| setting | seeds | steps | group | codes | composed | each seed | probe | "
             "commonest substitution (samples) | commit |", "|" + "---|" * 10]
    sweep = seen_sweep(groups, world)
    for name, members in groups.items():
        if members[0][1].get("seen_count") is not None:               # in the diversity table
            continue
        finals = [history[-1] for _, _, history in members]
        for group, codes in world.GROUPS.items():
            def over(key):
                return [float(np.mean([f[key][c] for c in codes])) for f in finals]
            counts = {}
            for f in finals:
                for code in codes:
                    for what, k in f.get("substitution", {}).get(code, {}).items():
                        counts[what] = counts.get(what, 0) + k
            common = max(sorted(counts), key=counts.get) if counts else "none"
            each = " / ".join(f"{100 * v:.1f}" for v in over("acc"))
            lines.append(f"| `{name}` | {seeds_of(members)} | {finals[0]['step']} | {group} | "
                         f"{len(codes)} | {mean_std(over('acc'))} | {each} | "
                         f"{mean_std(over('probe_acc'))} | {common} ({counts.get(common, 0)}) "
                         f"| {commits(members)} |")
    grids = ", ".join(f"[{name}](runs/{name}/samples.png)" for members in groups.values()
                      for name, _, _ in members)
    rows, columns = " × ".join(world.FACTORS[:-1]), world.FACTORS[-1]
    lines += ["", f"Grids (rows {rows}, columns {columns}, each cell framed by its split): "
              f"{grids}; beside them [real renders](real.png).", ""]
    if hasattr(world, "frames_of"):                      # save_clips: each setting's first seed
        shown = [members[0][0] for members in groups.values()]
        lines += ["The novel clips, playing: " + ", ".join(
            f"[{name}](runs/{name}/clips.gif)" for name in shown) + "; still, frame by frame: "
            + ", ".join(f"[{name}](runs/{name}/strip.png)" for name in shown) + ".", ""]
    lines += [f"![{'level-1 and level-2' if world.LEVEL2 else 'level-1'} over training](novel.png)"]
    extra = (cra_table(groups, world) if hasattr(world, "cra")
             else seen_table(sweep, world, reach) if sweep else [])
    return "\n".join(lines + extra) + "\n"


# ------------------------------------------------------------------------- a world of clips
CLIPS_SHOWN = 6                                      # clips of each novel class in the pictures
# The study's Table 12 (Hit@1 of the novel clips; CoVLA clips, V-JEPA2 features), by model
STUDY_HIT1 = {"dit": {"02": 0.47, "10": 0.43}, "maskgit": {"02": 0.18, "10": 0.14}}


def cra_table(groups, world):
    """The study's Table 12 for a clip world: per setting and novel class, Hit@1 (mean ± std over
    seeds, then each seed), the six-way row (mean over seeds) and the study's Hit@1."""
    classes = [world.describe(code) for code in world.COMPOSITIONS]
    lines = ["", "## Where the novel clips land: CRA, the study's Table 12 (%)", "",
             "Each novel clip takes the class of its nearest real clip in `clips.features` "
             "(frame 1 and the three frame differences, pooled to 8×8); Hit@1 is the share on "
             f"the asked class, chance 1/{len(classes)} = {100 / len(classes):.1f}%. The study's "
             "Hit@1 is of a world model's CoVLA clips in V-JEPA2 features. *Hit, refused*: "
             "the share that lands on the asked class though the composed reading refuses it "
             "(retrieval has no \"not a clip\" answer).", "",
             "| setting | seeds | asked | Hit@1 | each seed | hit, refused | "
             + " | ".join(classes) + " | the study's Hit@1 |", "|" + "---|" * (7 + len(classes))]
    for name, members in groups.items():
        finals = [history[-1]["cra"] for _, _, history in members if "cra" in history[-1]]
        for code in (world.LEVEL1 + world.LEVEL2) * bool(finals):
            hits = [f["hit1"][code] for f in finals]
            refused = mean_std([f["hit_refused"][code] for f in finals])
            row = [mean_std([f["row"][code][c] for f in finals]) for c in world.COMPOSITIONS]
            study = STUDY_HIT1.get(members[0][1].get("model"), {}).get(code)
            study = "" if study is None else f"{100 * study:.0f}"
            lines.append(f"| `{name}` | {seeds_of(members)} | {world.describe(code)} | "
                         f"{mean_std(hits)} | " + " / ".join(f"{100 * h:.1f}" for h in hits)
                         + f" | {refused} | " + " | ".join(row) + f" | {study} |")
    return lines


def novel_clips(images, factors, world):
    """[(class, its first CLIPS_SHOWN clips as frames (K, T, H, W, 3) uint8)], novel classes."""
    codes = np.array([world.bits_to_code(f) for f in factors])
    return [(world.describe(code), world.frames_of(np.asarray(images)[codes == code][:CLIPS_SHOWN]))
            for code in world.LEVEL1 + world.LEVEL2 if (codes == code).any()]


def save_clips(folder, images, factors, world, title):
    """clips.gif, the run's novel clips playing (one row a class, its frames in turn, matplotlib's
    Pillow writer), and strip.png, the same clips still: one row a clip, its frames left to
    right."""
    plt = runs.pyplot()
    from matplotlib.animation import FuncAnimation, PillowWriter
    shown = novel_clips(images, factors, world)
    fig, axes = plt.subplots(len(shown), 1, figsize=(1.0 * CLIPS_SHOWN, 1.3 * len(shown)),
                             squeeze=False)
    pictures = []
    for ax, (label, frames) in zip(axes[:, 0], shown):
        pictures.append(ax.imshow(np.concatenate(list(frames[:, 0]), 1), interpolation="nearest"))
        ax.set_title(f"asked: {label}", fontsize=8)
        ax.set_axis_off()
    fig.suptitle(title, fontsize=8)

    def show(t):
        for picture, (_, frames) in zip(pictures, shown):
            picture.set_data(np.concatenate(list(frames[:, t]), 1))
        return pictures
    FuncAnimation(fig, show, frames=shown[0][1].shape[1]).save(
        os.path.join(folder, "clips.gif"), writer=PillowWriter(fps=2), dpi=80)
    plt.close(fig)
    draw_strip(os.path.join(folder, "strip.png"), [clip for _, frames in shown for clip in frames],
               [label for label, frames in shown for _ in frames], title)


def draw_strip(path, clips, labels, title):
    """Clips still, one row a clip (T, H, W, 3), its frames left to right, each row labelled."""
    plt = runs.pyplot()
    rows = [np.concatenate(list(clip), 1) for clip in clips]
    fig, ax = plt.subplots(figsize=(4, 0.9 * len(rows)))
    ax.imshow(np.concatenate(rows, 0), interpolation="nearest")
    ax.set_yticks([(i + 0.5) * rows[0].shape[0] for i in range(len(rows))])
    ax.set_yticklabels(labels, fontsize=6)
    side, count = rows[0].shape[0], rows[0].shape[1] // rows[0].shape[0]      # frames a clip
    ax.set_xticks([(t + 0.5) * side for t in range(count)])
    ax.set_xticklabels([f"frame {t + 1}" for t in range(count)], fontsize=6)
    ax.set_title(title, fontsize=7)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def save_models_strip(path, runs_shown, world):
    """strip.png of a results folder: one row per (setting, novel class), that setting's first
    seed's first clip asked for the class: the models side by side, for the front page."""
    clips, labels = [], []
    for name, images, factors in runs_shown:
        for label, frames in novel_clips(images, factors, world):
            clips.append(frames[0])
            labels.append(f"{name}: {label}")
    draw_strip(path, clips, labels, f"{world.NAME}: the first clip asked for each novel class")


# ------------------------------------------------------------ how much diversity (--seen-count)
def seen_sweep(groups, world):
    """{model: {N: [each seed's last metrics line]}} for the settings trained on narrowed seen sets
    (--seen-count N) beside their run on the whole seen set (N = 190)."""
    by = {}
    for members in groups.values():
        config = members[0][1]
        count = config.get("seen_count") or len(world.SEEN)
        base = " ".join(setting(config).replace(f"--seen-count {count}", "").split())
        by.setdefault(base, {})[count] = [
            history[-1] for _, _, history in members]
    return {base.split(".py")[0]: dict(sorted(counts.items())) for base, counts in by.items()
            if len(counts) > 1}


def reach_of(folder):
    """{N: {split: (tokens, codes)}} of the folder's reach.json (tools/world.py), {} if none."""
    path = os.path.join(folder, "reach.json")
    return read_json(path) if os.path.exists(path) else {}


def seen_table(sweep, world, reach):
    """The diversity sweep's table: per model and N, composed on the N trained codes, on the seen
    codes it never trained on, on level-1 and level-2 (mean ± std, each seed's level-2), level-2
    on the probe, and the reach of level-2's codebook ids (reach.json, tools/world.py)."""
    lines = ["", "## How much diversity composition needs: composed (%) against the seen codes N",
             "", "Trained on the first N codes of `shapes3d.seen_order()` (`--seen-count N`), "
             "19,000 training images at every N; the test set never changes.", "",
             "| model | N | seeds | trained codes | seen, not trained | level-1 | level-2 | "
             "each seed's level-2 | level-2 probe | level-2 ids never trained |",
             "|" + "---|" * 10]
    for model, counts in sweep.items():
        for count, finals in counts.items():
            trained = world.narrowed(count).SEEN
            held_out = [c for c in world.SPLITS["seen"] if c not in trained]

            def over(key, codes):
                return [float(np.mean([f[key][c] for c in codes])) for f in finals]
            never = reach.get(str(count), {}).get("level2")
            lines.append(
                f"| {model} | {count} | {len(finals)} | {mean_std(over('acc', trained))} | "
                f"{mean_std(over('acc', held_out)) if held_out else '-'} | "
                f"{mean_std([f['level1'] for f in finals])} | "
                f"{mean_std([f['level2'] for f in finals])} | "
                + " / ".join(f"{100 * f['level2']:.1f}" for f in finals)
                + f" | {mean_std(over('probe_acc', world.LEVEL2))} | "
                + (f"{100 * never[1]:.1f}%" if never else "-") + " |")
    return lines + ["", "![level-2 and level-1 composed against N](diversity.png)"]


def plot_seen_sweep(path, sweep, reach):
    """Level-2 (solid) and level-1 (dashed) composed against N, one panel per model, a thin line
    per seed and the mean in bold; and a panel of the reach (level-2's ids never trained)."""
    plt = runs.pyplot()
    fig, axes = plt.subplots(1, len(sweep) + 1, figsize=(4.2 * (len(sweep) + 1), 3.6),
                             squeeze=False)
    for ax, (model, counts) in zip(axes[0], sweep.items()):
        ns = list(counts)
        for split, style, color in (("level2", "-", "tab:red"), ("level1", "--", "hotpink")):
            for seed in range(max(len(f) for f in counts.values())):
                points = [(n, 100 * f[seed][split]) for n, f in counts.items() if seed < len(f)]
                ax.plot(*zip(*points), style, color=color, linewidth=0.6, alpha=0.6)
            ax.plot(ns, [100 * np.mean([f[split] for f in counts[n]]) for n in ns], style,
                    color=color, linewidth=2.2, marker="o", markersize=3,
                    label=split.replace("level", "level-"))
        ax.set_title(f"{model}: composed (%)", fontsize=9)
    panels = list(axes[0][:-1])
    ns = sorted(int(n) for n in reach)
    for split, style in (("level2", "-"), ("level1", "--")):
        if ns:
            axes[0][-1].plot(ns, [100 * reach[str(n)][split][1] for n in ns], style, color="gray",
                             marker="o", markersize=3, label=split.replace("level", "level-"))
    axes[0][-1].set_title("codebook ids of novel renders never trained (%)", fontsize=9)
    ticks = sorted(set(ns).union(*[counts for counts in sweep.values()]))
    for ax in panels + [axes[0][-1]]:
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(n) for n in ticks])
        ax.minorticks_off()
        ax.set_xlabel("seen codes N")
        ax.set_ylim(-3, 103)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------ the time course (long runs)
def course_reading(metrics, key):
    """A time-course reading of one evaluation, in [0, 1]: level-2 composed, or 111's probe."""
    return metrics["probe_acc"]["111"] if key == "probe_111" else metrics[key]


def on_course(groups):
    """The settings of LONG steps or more trained with the long-budget recipe, by script:
    {script: (setting, members)}."""
    course = {}
    for name, members in groups.items():
        config = members[0][1]
        if (all(config.get(key) == value for key, value in LONG_RECIPE.items())
                and config.get("steps", 0) >= LONG):
            course.setdefault(f"{config['model']}.py", (name, members))
    return course


def plot_time_course(path, course):
    """One column per model, one row per reading: a thin line per seed, the mean over seeds (at the
    steps they share) in bold, log-scaled steps."""
    plt = runs.pyplot()
    fig, axes = plt.subplots(len(COURSE), len(course), figsize=(3.2 * len(course), 5.6),
                             squeeze=False, sharey=True)
    for column, (script, (name, members)) in enumerate(course.items()):
        for row, (key, label) in enumerate(COURSE):
            ax = axes[row][column]
            for _, config, history in members:
                ax.plot([m["step"] for m in history],
                        [100 * course_reading(m, key) for m in history], "-", color="tab:gray",
                        linewidth=0.8)
            steps = sorted(set.intersection(*[{m["step"] for m in h} for _, _, h in members]))
            mean = [100 * np.mean([course_reading(next(m for m in h if m["step"] == s), key)
                                   for _, _, h in members]) for s in steps]
            ax.plot(steps, mean, "-", color="black", linewidth=2.2,
                    label=f"mean of {len(members)} seed{'s' * (len(members) > 1)}")
            runs.log_step_axis(ax)
            ax.set_ylim(-3, 103)
            ax.set_title(script if row == 0 else "", fontsize=9)
            ax.set_ylabel(label if column == 0 else "", fontsize=8)
            ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def time_course_table(course):
    """Each seed's peak (the first step at its highest value) and end, of each time-course
    reading."""
    lines = ["", "## The time course: each seed's peak (step) and end, with the long-budget recipe",
             "", "| setting | seed | " + " | ".join(f"{label}: peak (step) | end"
                                                     for _, label in COURSE) + " | commit |",
             "|---|---|" + "---|---|" * len(COURSE) + "---|"]
    for name, members in course.values():
        for _, config, history in members:
            cells = []
            for key, _ in COURSE:
                values = [course_reading(m, key) for m in history]
                peak = int(np.argmax(values))
                cells += [f"{100 * values[peak]:.1f} ({history[peak]['step']})",
                          f"{100 * values[-1]:.1f}"]
            lines.append(f"| `{name}` | {config['seed']} | " + " | ".join(cells)
                         + f" | {commit(config)} |")
    return "\n".join(lines + ["", "![the time course](time-course.png)"]) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="the results folder, results/<question>")
    parser.add_argument("--add", nargs="+", action="extend", default=[], metavar="RUN",
                        help="run folders to keep in it first (--add A B, or --add A --add B)")
    parser.add_argument("--clock",
                        help="a kept run that had the machine to itself: its model's wall times")
    parser.add_argument("--summary", action="store_true", help="also print the front page's rows")
    args = parser.parse_args(argv)
    add(args.folder, args.add)
    groups, written = write(args.folder, args.clock)
    print(written, end="")
    if args.summary:
        print("\n".join(summary(groups)))


if __name__ == "__main__":
    main()
