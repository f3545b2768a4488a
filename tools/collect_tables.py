"""The tables of table.md for Shapes2D's runs (collect.text picks one): the three readings and the
time to composition (the ladder and every Shapes2D question), objects.py's, and the long runs' time
course; the front page's rows (collect.py --summary); and mean ± std over seeds, the cell every
table (collect_worlds.py's too) is made of. Named collect_tables: collect.py's tables, beside it.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import data
import judge
from collect_settings import commit, commits, seeds_of

READINGS = (("composed", "acc"), ("fidelity", "fidelity"), ("probe", "probe_acc"))
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


# ------------------------------------------------------------------ the time course (long runs)
# The long-budget recipe the DiT controls chose (results/long-runs/README.md): the rate decayed to
# 0 over the run. A run of results/long-runs trained with it is on the time course; the rest are
# controls.
LONG_RECIPE, LONG = {"lr_schedule": "cosine"}, 10000       # the recipe, from this many steps


def course_rows(world=data):
    """The time course's readings, (key, label): the world's farthest novel split composed, and
    that split on the study's probe (Shapes2D's level-2 is 111 alone)."""
    split = "level2" if world.LEVEL2 else "level1"
    codes, title = world.SPLITS[split], split.replace("level", "level-")
    probed = codes[0] if len(codes) == 1 else title
    return ((split, f"{title} composed (%)"),
            (f"probe_{split}", f"{probed} on the study's probe (%)"))


def course_reading(metrics, key, world=data):
    """A time-course reading of one evaluation, in [0, 1]: a split composed, or the mean of its
    codes on the probe (nan where the evaluation kept no probe)."""
    if not key.startswith("probe_"):
        return metrics[key]
    probe = metrics.get("probe_acc", {})
    return float(np.mean([probe.get(code, np.nan) for code in world.SPLITS[key[len("probe_"):]]]))


def on_course(groups):
    """The settings of LONG steps or more trained with the long-budget recipe, by script, or by
    setting where a script has two: {script or setting: (setting, members)}."""
    found = [(name, members) for name, members in groups.items()
             if all(members[0][1].get(key) == value for key, value in LONG_RECIPE.items())
             and members[0][1].get("steps", 0) >= LONG]
    scripts = [f"{members[0][1]['model']}.py" for _, members in found]
    return {script if scripts.count(script) == 1 else name: (name, members)
            for script, (name, members) in zip(scripts, found)}


def time_course_table(course):
    """Each seed's peak (the first step at its highest value) and end, of each time-course
    reading (a Shapes2D folder's table; other worlds' tables are collect_worlds')."""
    rows = course_rows()
    lines = ["", "## The time course: each seed's peak (step) and end, with the long-budget recipe",
             "", "| setting | seed | " + " | ".join(f"{label}: peak (step) | end"
                                                     for _, label in rows) + " | commit |",
             "|---|---|" + "---|---|" * len(rows) + "---|"]
    for name, members in course.values():
        for _, config, history in members:
            cells = []
            for key, _ in rows:
                values = [course_reading(m, key) for m in history]
                peak = int(np.argmax(values))
                cells += [f"{100 * values[peak]:.1f} ({history[peak]['step']})",
                          f"{100 * values[-1]:.1f}"]
            lines.append(f"| `{name}` | {config['seed']} | " + " | ".join(cells)
                         + f" | {commit(config)} |")
    return "\n".join(lines + ["", "![the time course](time-course.png)"]) + "\n"
