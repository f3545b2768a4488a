"""The inside study's tables and figures, from the inside.json each kept run holds.

    python tools/inside_summary.py results/inside --add runs/ladder/maskgit ...  # keep runs
    python tools/inside_summary.py results/inside                   # rebuild from what is kept

Reads results/<question>/runs/<name>/inside.json (written by `python studies/inside.py RUN`)
beside the run's config.json, groups runs by setting as tools/collect.py does (means over seeds),
and writes inside.md (the run's three readings, reach, readout by layer, units and circuits, the
circuit ablation, over training), layers.png (the level-2 readout by layer) and
attribution.png (each unit's drop per factor, seed 0 of each setting). --add keeps a run's
files as tools/collect.py does, and its inside.json.
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import collect  # noqa: E402
from collect_tables import mean_std  # noqa: E402
import runs  # noqa: E402

FACTORS = ("shape", "color", "size")


def load(folder):
    """{setting: [inside.json of each seed]}, in collect's order (the ladder's, then seeds)."""
    kept = {}
    for setting, members in collect.load(folder, None).items():
        paths = [os.path.join(folder, "runs", name, "inside.json") for name, _, _ in members]
        results = [json.load(open(path)) for path in paths if os.path.exists(path)]
        if results:
            kept[setting] = results
    if not kept:
        raise SystemExit(f"error: no run in {folder}/runs holds an inside.json; run python "
                         "inside.py RUN, then --add RUN")
    return kept


def add(folder, sources):
    """Keep each run as collect.py does (config, metrics, final samples), and its inside.json."""
    missing = [source for source in sources
               if not os.path.exists(os.path.join(source, "inside.json"))]
    if missing:
        raise SystemExit(f"error: {missing[0]} holds no inside.json; run python studies/inside.py "
                         f"{missing[0]} first")
    collect.add(folder, sources)
    for source in sources:
        shutil.copy(os.path.join(source, "inside.json"),
                    os.path.join(folder, "runs", os.path.basename(os.path.normpath(source)),
                                 "inside.json"))


def reading_rows(kept):
    rows = ["| setting | seeds | seen | level-1 | level-2 | level-2 fidelity | level-2 probe |",
            "|---|---|---|---|---|---|---|"]
    for setting, results in kept.items():
        at = [r["readings"] for r in results if "readings" in r]
        rows.append(f"| `{setting}` | {len(results)} | " + " | ".join(
            [mean_std([a[split] for a in at], 100) for split in ("seen", "level1", "level2")]
            + [mean_std([a[key]["111"] for a in at], 100) for key in ("fidelity", "probe_acc")])
            + " |")
    return rows


def reach_rows(kept):
    rows = ["| setting | seeds | reading | trained code | untrained code | untrained share "
            "of positions |", "|---|---|---|---|---|---|"]
    for setting, results in kept.items():
        for name in [k for k, v in results[0]["reach"].items() if isinstance(v, dict)]:
            scale, digits = (100, 2) if name.startswith(("p(", "mass")) else (1, 3)
            unit = " (%)" if scale == 100 else ""
            share = [r["reach"]["untrained share of hidden positions"] for r in results]
            rows.append(f"| `{setting}` | {len(results)} | {name}{unit} | "
                        + " | ".join(mean_std([r["reach"][name][split] for r in results], scale,
                                              digits)
                                     for split in ("trained code", "untrained code"))
                        + f" | {mean_std(share, 100, 1)}% |")
    return rows


def readout_rows(kept):
    layers = list(dict.fromkeys(layer for results in kept.values() for r in results
                                for layer in r["readout"]))        # every run's, a deeper one too
    rows = ["| setting | factor | " + " | ".join(layers) + " | shuffled labels |",
            "|---|---|" + "---|" * (len(layers) + 1)]
    for setting, results in kept.items():
        for factor in FACTORS:
            cells = [mean_std([r["readout"][layer][factor]["level2"] for r in results
                               if layer in r["readout"]], 100, 0)
                     for layer in layers]
            control = mean_std([r["readout_shuffled"][factor]["level2"] for r in results], 100, 0)
            rows.append(f"| `{setting}` | {factor} | " + " | ".join(cells) + f" | {control} |")
    return rows


def unit_rows(kept):
    rows = ["| setting | seeds | accuracy (probe): shape / colour / size | polysemanticity, heads "
            "| polysemanticity, all units "
            "| Jaccard, mean of pairs | weighted Jaccard | colour circuit: colour / shape drop | "
            "shape circuit: colour / shape drop |",
            "|---|---|---|---|---|---|---|---|---|"]
    for setting, results in kept.items():
        accuracy = " / ".join(mean_std([r["accuracy"]["probe"][f] for r in results], 100, 0)
                              for f in range(3))
        poly = [mean_std([r["polysemanticity"]["probe"][group] for r in results], 1, 2)
                for group in ("heads", "units")]
        jaccard = [mean_std([np.nanmean([p[kind] for p in r["overlap"].values()]) for r in results],
                            1, 2)
                   for kind in ("jaccard", "weighted")]
        drops = [" / ".join(mean_std([r["circuit_ablation"][c]["probe"][f] for r in results],
                                     100, 1) for f in ("color", "shape"))
                 for c in ("color circuit", "shape circuit")]
        rows.append(f"| `{setting}` | {len(results)} | {accuracy} | "
                    + " | ".join(poly + jaccard + drops) + " |")
    return rows


def over_training_rows(kept):
    rows = ["| setting | step | polysemanticity, heads | polysemanticity, all units | Jaccard | "
            "weighted Jaccard |",
            "|---|---|---|---|---|---|"]
    for setting, results in kept.items():
        steps = sorted({r["step"] for result in results for r in result.get("over_training", [])})
        for step in steps:
            at = [r for result in results for r in result.get("over_training", [])
                  if r["step"] == step]
            poly = [mean_std([r["polysemanticity"]["probe"][g] for r in at], 1, 2)
                    for g in ("heads", "units")]
            overlap = [mean_std([np.nanmean([p[k] for p in r["overlap"].values()]) for r in at],
                                1, 2)
                       for k in ("jaccard", "weighted")]
            rows.append(f"| `{setting}` | {step} | " + " | ".join(poly) + " | "
                        + " | ".join(overlap) + " |")
    return rows


def text(folder):
    kept = load(folder)
    lines = ["Rebuilt by `python tools/inside_summary.py "
             f"results/{os.path.basename(os.path.normpath(folder))}` from the "
             "inside.json of each kept run (`python studies/inside.py RUN`); mean ± std over "
             "seeds.", "",
             "## The runs' own readings at the step read (composed %, and level-2's "
             "fidelity and probe)", "",
             *reading_rows(kept), "",
             "## Reach: the truth's score at hidden positions, by whether its code ever "
             "occurred in training", "",
             *reach_rows(kept), "",
             "## Readout by layer: a linear probe's accuracy on level-2 (%), trained on the seen "
             "compositions", "",
             *readout_rows(kept), "",
             "## Units and circuits (the probe's factor reading; drops in points)", "",
             *unit_rows(kept), "",
             "## Over training", "", *over_training_rows(kept), "",
             "![the level-2 readout by layer](layers.png)", "",
             "![each unit's drop per factor](attribution.png)"]
    return "\n".join(lines) + "\n", kept


def plot_reach(folder, kept):
    plt = runs.pyplot()
    fig, axes = plt.subplots(1, len(kept), figsize=(3 * len(kept), 2.8), sharey=True, squeeze=False)
    for ax, (setting, results) in zip(axes[0], kept.items()):
        layers = list(results[0]["readout"])
        for factor, color in zip(FACTORS, ("tab:green", "tab:blue", "tab:orange")):
            ax.plot(range(len(layers)),
                    [100 * np.mean([r["readout"][layer][factor]["level2"] for r in results])
                     for layer in layers],
                    marker="o", color=color, label=factor)
        ax.set_xticks(range(len(layers)), [layer.replace("block ", "b") for layer in layers],
                      fontsize=7)
        ax.set_title(setting, fontsize=7)
        ax.set_ylim(-3, 103)
    axes[0][0].set_ylabel("level-2 read right (%)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "layers.png"), dpi=110)
    plt.close(fig)
    fig, axes = plt.subplots(1, len(kept), figsize=(1.6 * len(kept) + 1.6, 6), sharey=True,
                             squeeze=False)
    for i, (ax, (setting, results)) in enumerate(zip(axes[0], kept.items())):
        names = list(results[0]["attribution"])
        a = 100 * np.array([results[0]["attribution"][n]["probe"] for n in names])
        image = ax.imshow(a, cmap="RdBu_r", vmin=-50, vmax=50, aspect="auto")
        ax.set_xticks(range(3), FACTORS, fontsize=7, rotation=90)
        ax.set_yticks(range(len(names)), names, fontsize=6)
        ax.tick_params(axis="y", labelleft=i == 0)           # one column of unit names, at the left
        ax.set_title(setting.replace(" --", "\n--"), fontsize=7)
    fig.subplots_adjust(left=0.8 / (1.6 * len(kept) + 1.6) * 2, right=0.8, wspace=0.08)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.6, label="drop in accuracy (points)")
    fig.savefig(os.path.join(folder, "attribution.png"), dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="the results folder, results/<question>")
    parser.add_argument("--add", nargs="+", default=[], metavar="RUN",
                        help="run folders (with inside.json) to keep first")
    args = parser.parse_args(argv)
    add(args.folder, args.add)
    body, kept = text(args.folder)
    plot_reach(args.folder, kept)
    with open(os.path.join(args.folder, "inside.md"), "w") as f:
        f.write(body)
    print(body, end="")


if __name__ == "__main__":
    main()
