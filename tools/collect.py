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
import runs
import worlds

# The parts, by what they make; each imports none of this file (collect.py hands them the runs):
# collect_settings.py (a setting's name, seeds, commits), collect_tables.py (Shapes2D's tables),
# collect_worlds.py (a many-valued world's tables, the diversity sweep), collect_pictures.py.
from collect_pictures import (plot_curves, plot_seen_sweep, plot_time_course, save_clips,
                              save_models_strip)
from collect_settings import setting
from collect_tables import objects_table, on_course, summary, table, time_course_table
from collect_worlds import seen_sweep, world_table

LADDER = runs.MODELS                                                # rows in this order
REAL_SEED = 7                                       # the real renders set beside the runs' grids


def read_json(path):
    with open(path) as f:
        return json.load(f)


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


def reach_of(folder):
    """{N: {split: (tokens, codes)}} of the folder's reach.json (tools/world.py), {} if none."""
    path = os.path.join(folder, "reach.json")
    return read_json(path) if os.path.exists(path) else {}


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
    course = on_course(groups)
    if course:
        plot_time_course(os.path.join(folder, "time-course.png"), course, world)
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
