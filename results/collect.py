"""Copy the pictures of finished runs into results/ and write results/table.md from their metrics.

    python results/collect.py runs/dit runs/maskgit ...   # default: every folder under runs/
"""
import glob
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import data  # noqa: E402
import probe  # noqa: E402
import runs  # noqa: E402


def main(folders):
    rows = ["| run | command flags | steps | seen | level-1 | level-2 | malformed | 1-NN | "
            + " | ".join(data.COMPOSITIONS) + " |", "|" + "---|" * 16]
    for folder in folders:
        metrics = runs.read_metrics(folder)
        if not metrics:
            continue
        config = json.load(open(os.path.join(folder, "config.json")))
        name = os.path.basename(os.path.normpath(folder))
        last = metrics[-1]
        flags = " ".join(f"--{k.replace('_', '-')} {','.join(map(str, v)) if isinstance(v, list) else v}"
                         for k, v in sorted(config.items())
                         if k in ("cond", "unmask", "tokenizer", "jepa_weight", "jepa_layers", "steps"))
        rows.append(f"| {name} | `{config['model']}.py` {flags} | {last['step']} | {100 * last['seen']:.1f} | "
                    f"{100 * last['level1']:.1f} | {100 * last['level2']:.1f} | {100 * last['malformed']:.1f} | "
                    f"{100 * last['retrieval_1nn']:.1f} | "
                    + " | ".join(f"{100 * last['acc'][c]:.0f}" for c in data.COMPOSITIONS) + " |")
        for picture in ("samples.png", "curves.png"):
            shutil.copy(os.path.join(folder, picture), os.path.join(HERE, f"{name}-{picture}"))
    with open(os.path.join(HERE, "table.md"), "w") as f:
        f.write("Judged accuracy (%) at each run's last evaluation; written by results/collect.py\n\n")
        f.write("\n".join(rows) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1:] or sorted(glob.glob("runs/*/")))
