"""The pictures of a results folder: novel.png (the readings over training, the mean over seeds),
a clip world's clips.gif and strip.png (each setting's first seed's novel clips, playing and still)
and the folder's strip.png (the settings side by side), diversity.png (the --seen-count sweep) and
time-course.png (the long runs). Each run's grid is drawn by its world's own code (collect.write).
Named collect_pictures: what collect.py draws, beside it.
"""
import os
import sys
import textwrap

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import data
import runs
from collect_tables import course_reading, course_rows

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


# ------------------------------------------------------------------------- a world of clips
CLIPS_SHOWN = 6                                      # clips of each novel class in the pictures


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
def plot_time_course(path, course, world=data):
    """One column per model (per setting where a model has two), one row per reading: a thin line
    per seed, the mean over seeds (at the steps they share) in bold, log-scaled steps."""
    plt = runs.pyplot()
    rows = course_rows(world)
    fig, axes = plt.subplots(len(rows), len(course), figsize=(3.2 * len(course), 5.6),
                             squeeze=False, sharey=True)
    for column, (script, (name, members)) in enumerate(course.items()):
        for row, (key, label) in enumerate(rows):
            ax = axes[row][column]
            for _, config, history in members:
                ax.plot([m["step"] for m in history],
                        [100 * course_reading(m, key, world) for m in history], "-",
                        color="tab:gray", linewidth=0.8)
            steps = sorted(set.intersection(*[{m["step"] for m in h} for _, _, h in members]))
            mean = [100 * np.mean([course_reading(next(m for m in h if m["step"] == s), key, world)
                                   for _, _, h in members]) for s in steps]
            ax.plot(steps, mean, "-", color="black", linewidth=2.2,
                    label=f"mean of {len(members)} seed{'s' * (len(members) > 1)}")
            runs.log_step_axis(ax)
            ax.set_ylim(-3, 103)
            ax.set_title(textwrap.fill(script, 36) if row == 0 else "", fontsize=9)
            ax.set_ylabel(label if column == 0 else "", fontsize=8)
            ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
