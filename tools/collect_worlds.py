"""table.md for runs in a world of many compositions (worlds/, --world): composed and the study's
probe by group, with the commonest substitution; a clip world's CRA (the study's Table 12); and the
diversity sweep (--seen-count N): its runs gathered by N, and its table. Named collect_worlds: the
tables of the worlds beside Shapes2D (a bare `worlds` is the package of those worlds).
"""
import numpy as np

import runs
from collect_settings import commits, seeds_of, setting
from collect_tables import mean_std


# ------------------------------------------------------------------ a world of many compositions
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
        for group, codes in runs.table_rows(world).items():
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
