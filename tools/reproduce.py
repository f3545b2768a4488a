"""Every Shapes2D experiment in one command: the runs, then figures and tables beside the paper's.

    python tools/reproduce.py --budget quick   # short runs, the early stage: over an hour on 2 CPU cores
    python tools/reproduce.py --budget default # each script's own budget, 3 seeds: half a day on 2 CPU cores
    python tools/reproduce.py --budget full    # the long runs the story needs: days on a CPU, under
                                                 # an hour on one H200 (eight runs share each GPU)

Each run is a generator's own command line, in runs/suite-<budget>/<run>/seed<k>. Re-running the
command skips finished runs and resumes interrupted ones; --report-only redraws the figures and
tables from what has finished. Figures and tables go to runs/suite-<budget>/report/ (index: README.md there).
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
from tqdm import tqdm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
import data  # noqa: E402
import probe  # noqa: E402
import runs  # noqa: E402
from collect import first_reaching, minutes  # noqa: E402

BUDGETS = {  # steps of every run, of the time-course runs (seed 0 only), evaluation and data sizes
    "tiny": dict(steps=3, long_steps=6, eval_every=2, samples_per_comp=2, train_per_comp=100, batch_size=8,
                 seeds=(0,)),                                        # the test of this script, not an experiment
    "quick": dict(steps=150, long_steps=1500, eval_every=50, samples_per_comp=16, train_per_comp=5000,
                  batch_size=64, seeds=(0, 1, 2)),
    "default": dict(steps=2000, long_steps=8000, eval_every=250, samples_per_comp=32, train_per_comp=5000,
                    batch_size=64, seeds=(0, 1, 2)),                  # what `python <script>` does
    "full": dict(steps=10000, long_steps=20000, eval_every=250, samples_per_comp=32, train_per_comp=5000,
                 batch_size=64, seeds=(0, 1, 2)),
}
RUNS = {  # run name -> (script, its flags beyond the budget's)
    "maskgit": ("maskgit.py", []),
    "givt": ("givt.py", []),
    "mar": ("mar.py", []),
    "dit": ("dit.py", []),
    "dit-dropout": ("dit.py", ["--cond", "dropout"]),
    "dit-discrete": ("dit.py", ["--cond", "discrete"]),
    "dit-discrete-dropout": ("dit.py", ["--cond", "discrete-dropout"]),
    "jepa_maskgit": ("jepa_maskgit.py", []),
    "maskgit-random": ("maskgit.py", ["--unmask", "random"]),
    "dit-codebook": ("dit.py", ["--tokenizer", "codebook"]),
    "dit-pca": ("dit.py", ["--tokenizer", "pca"]),
    "mar-codebook": ("mar.py", ["--tokenizer", "codebook"]),
    "mar-pca": ("mar.py", ["--tokenizer", "pca"]),
    "givt-codebook": ("givt.py", ["--tokenizer", "codebook"]),
    "givt-pca": ("givt.py", ["--tokenizer", "pca"]),
    "ar": ("ar.py", ["--head", "categorical"]),
    "ar-gmm": ("ar.py", ["--head", "gmm"]),
}
LADDER = ["maskgit", "givt", "mar", "dit"]
# One of these small runs alone leaves a GPU mostly waiting: on an H200, dit.py trained at 41 steps/s alone,
# 91 / 181 / 258 steps/s in all with 2 / 4 / 8 copies sharing it (`bash tools/rate_scan.sh`, see the README).
RUNS_PER_GPU = 8
# The paper's Shapes2D figures where it gives them (seen / level-1 / level-2, %); arXiv 2510.03075; results/README.md sets them beside ours.
PAPER = {
    "maskgit": "85.6 / 52.4 / 0.7 (Table 4); level-2 peaks near 14% at ~3k steps, ~0 by 60k",
    "givt": "level-2 about 50-85 (curves)",
    "mar": "level-2 about 75-94 (curves)",
    "dit": "97.3 / 99.0 / 96.9 (Table 4)",
    "dit-dropout": "level-2 peaks near 39%, then collapses (Figure 4)",
    "dit-discrete": "level-2 35-92%, about 53% at the end (Figure 4)",
    "dit-discrete-dropout": "level-2 about 0 (Figure 4)",
    "maskgit-random": "85.8 seen, 28.8 novel against 39.5 with confidence order (Table 3)",
    "ar": "86.7 / 38.5 / 6.2 (Table 2)",
    "ar-gmm": "90.2 / 64.1 / 46.9 (Table 2)",
}
TOKENIZERS = ["dit", "dit-codebook", "dit-pca", "mar", "mar-codebook", "mar-pca", "givt", "givt-codebook", "givt-pca"]


# ------------------------------------------------------------------------------------ runs
def command(name, seed, budget, folder, steps, device):
    script, flags = RUNS[name]
    return [sys.executable, os.path.join(ROOT, script), "--steps", str(steps), "--seed", str(seed),
            "--eval-every", str(budget["eval_every"]), "--samples-per-comp", str(budget["samples_per_comp"]),
            "--train-per-comp", str(budget["train_per_comp"]), "--batch-size", str(budget["batch_size"]),
            "--device", device, "--out", folder, *flags]


def job(runs_dir, name, seed, budget, steps, device, folder=None):
    """(folder, steps, command line, run name, seed) of one run."""
    folder = folder or os.path.join(runs_dir, name, f"seed{seed}")
    return folder, steps, command(name, seed, budget, folder, steps, device), name, seed


def finished(folder, steps):
    metrics = runs.read_metrics(folder)
    return bool(metrics) and metrics[-1]["step"] == steps


def execute(job, slot, workers, gpus):
    """Run (or resume) one job in a subprocess; its output goes to log.txt in its folder."""
    folder, steps, argv = job[:3]
    if finished(folder, steps):
        return 0, 0.0
    if os.path.exists(os.path.join(folder, "ckpt.pt")):
        argv = argv + ["--resume"]
    else:
        shutil.rmtree(folder, ignore_errors=True)                # nothing worth keeping: start again
    os.makedirs(folder, exist_ok=True)
    environment = dict(os.environ)
    if gpus:
        environment["CUDA_VISIBLE_DEVICES"] = str(slot % gpus)   # runs spread over the GPUs
    if workers > 1:                                              # runs share the CPU cores
        environment["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))
    start = time.time()
    with open(os.path.join(folder, "log.txt"), "a") as log:
        code = subprocess.run(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=environment).returncode
    seconds = time.time() - start
    with open(os.path.join(folder, "wall_seconds.txt"), "a") as f:
        f.write(f"{seconds:.1f}\n")
    return code, seconds


def run_all(jobs, workers, gpus, follow_up=lambda job: None):
    """Run jobs on `workers` slots at once; follow_up(job) may name a job that continues a finished
    one, and it runs next. Returns the folders of failed runs. Ctrl-C stops the runs (each keeps its
    last checkpoint) and starts no more."""
    todo, failed, lock, stop = collections.deque(jobs), [], threading.Lock(), threading.Event()
    bar = tqdm(total=len(jobs), desc="runs", unit="run")

    def worker(slot):
        while not stop.is_set():
            with lock:
                if not todo:
                    return
                job = todo.popleft()
            code, seconds = execute(job, slot, workers, gpus)
            with lock:
                where = os.path.relpath(job[0], ROOT)
                if stop.is_set():
                    return
                if code:
                    failed.append(where)
                    tqdm.write(f"FAILED {where} (exit {code}); see {where}/log.txt")
                else:
                    if seconds:
                        tqdm.write(f"done   {where} in {seconds / 60:.1f} min")
                    after = follow_up(job)
                    if after:
                        todo.appendleft(after)
                        bar.total += 1
                bar.update()

    threads = [threading.Thread(target=worker, args=(slot,), daemon=True) for slot in range(workers)]
    for thread in threads:
        thread.start()
    try:
        while any(thread.is_alive() for thread in threads):
            time.sleep(0.5)
    except KeyboardInterrupt:           # the runs got the Ctrl-C too and save on their way out
        stop.set()
        try:
            for thread in threads:
                thread.join()
        except KeyboardInterrupt:       # a second Ctrl-C: leave at once
            pass
        raise SystemExit("\ninterrupted; run the same command again to resume")
    bar.close()
    return failed


# ---------------------------------------------------------------------------------- report
def split_curves(history):
    """steps and, per split, judged accuracy (%) over training."""
    steps = np.array([m["step"] for m in history])
    return steps, {split: np.array([100 * m[split] for m in history]) for split in ("seen", "level1", "level2")}


def mean_std(values):
    values = np.asarray(values, dtype=float)
    return f"{values.mean():.1f} ± {values.std():.1f}" if len(values) > 1 else f"{values.mean():.1f}"


def finals(runs_dir, name, seeds, step=None):
    """Per seed of one run: its evaluation at `step`, or its last one; seeds without it are left out."""
    histories = [runs.read_metrics(os.path.join(runs_dir, name, f"seed{s}")) for s in seeds]
    if step is None:
        return [history[-1] for history in histories if history]
    return [m for history in histories for m in history if m["step"] == step]


def value(metrics, column):
    """A column of a table from one evaluation: the composition reading's split means, or level-2
    of the fidelity and probe readings."""
    if column in ("fidelity_level2", "probe_level2"):
        return probe.split_means(metrics["fidelity" if column == "fidelity_level2" else "probe_acc"])["level2"]
    return metrics[column]


def table(runs_dir, names, seeds, budget, paper=True, step=None,
          columns=("seen", "level1", "level2", "fidelity_level2", "probe_level2", "malformed", "retrieval_1nn")):
    header = {"seen": "seen", "level1": "level-1", "level2": "level-2", "malformed": "not legible",
              "fidelity_level2": "level-2 fidelity", "probe_level2": "level-2 probe",
              "retrieval_1nn": "1-NN retrieval", "retrieval_5nn": "5-NN retrieval"}
    rows = ["| run | command | " + " | ".join(header[c] for c in columns) + " | the paper |",
            "|---|---|" + "---|" * len(columns) + "---|"]
    for name in names:
        last = finals(runs_dir, name, seeds, step)
        if not last:
            continue
        script, flags = RUNS[name]
        rows.append(f"| {name} | `{' '.join([script, *flags])} --steps {budget['steps']}` | "
                    + " | ".join(mean_std([100 * value(m, c) for m in last]) for c in columns)
                    + f" | {PAPER.get(name, '') if paper else ''} |")
    return rows


def level(runs_dir, name, seeds, split, step=None):
    last = finals(runs_dir, name, seeds, step)
    return np.mean([100 * m[split] for m in last]) if last else float("nan")


def reading(experiment, names, runs_dir, seeds, step=None):
    """One line: what agrees with the paper and what does not, computed from the finals."""
    names = names + ["maskgit"] * (experiment == "tokenizer")          # the tokenizers are set beside MaskGIT
    missing = [n for n in names if len(finals(runs_dir, n, seeds, step)) < len(seeds)]
    if missing:
        return f"No reading: {', '.join(missing)} not evaluated for every seed{f' at step {step}' if step else ''}."
    level2 = {n: level(runs_dir, n, seeds, "level2", step) for n in names}
    novel = {n: (level(runs_dir, n, seeds, "level1", step) * 3 + level2[n]) / 4 for n in names}   # 3 level-1, 1 level-2
    seen = {n: level(runs_dir, n, seeds, "seen", step) for n in names}
    early = ", ".join(f"{n} {seen[n]:.1f}%" for n in names if seen[n] < 50)
    if all(seen[n] < 50 for n in names):           # a model that cannot draw what it saw tells nothing on novelty
        return f"Too early to read: no model draws its seen compositions half the time yet (seen: {early})."
    line = compare(experiment, novel, level2)
    return line + (f" Not drawing yet, so their novel numbers say little (seen: {early})." if early else "")


def compare(experiment, novel, level2):
    """The experiment's comparison with the paper, from per-run novel-composition and level-2 accuracy (%)."""
    if experiment == "ladder":
        above = all(novel[n] > novel["maskgit"] for n in ("givt", "mar", "dit"))
        return (f"Novel compositions (mean of the four): MaskGIT {novel['maskgit']:.1f}, GIVT {novel['givt']:.1f}, "
                f"MAR {novel['mar']:.1f}, DiT {novel['dit']:.1f}. The paper: every continuous model above the "
                f"discrete one; here: {'the same' if above else 'not so'}.")
    if experiment == "conditioning":
        modes = dict(level2)
        same = (modes["dit"] == max(modes.values()) and modes["dit-discrete-dropout"] == min(modes.values())
                and modes["dit"] > modes["dit-discrete-dropout"])
        return ("Level-2: " + ", ".join(f"{n} {v:.1f}" for n, v in modes.items()) + ". The paper: continuous "
                f"best, discrete-dropout worst; here: {'the same' if same else 'not so'}.")
    if experiment == "jepa":
        change = novel["jepa_maskgit"] - novel["maskgit"]
        return (f"Novel compositions: MaskGIT {novel['maskgit']:.1f}, JEPA-MaskGIT {novel['jepa_maskgit']:.1f} "
                f"({change:+.1f}). The paper: JEPA partly rescues MaskGIT; here: "
                f"{'it helps' if change > 0 else 'it does not help'} at this budget.")
    if experiment == "order":
        change = novel["maskgit-random"] - novel["maskgit"]
        return (f"Novel compositions: confidence {novel['maskgit']:.1f}, random {novel['maskgit-random']:.1f} "
                f"({change:+.1f}). The paper: random order lowers them (39.5 -> 28.8); here: "
                f"{'the same' if change < 0 else 'not so'}.")
    if experiment == "tokenizer":
        above = all(novel[n] > novel["maskgit"] for n in TOKENIZERS)
        return ("Novel compositions of the continuous models on each tokenizer: "
                + ", ".join(f"{n} {novel[n]:.1f}" for n in TOKENIZERS)
                + f"; MaskGIT {novel['maskgit']:.1f}. The paper: the objective decides, not the tokenizer; here: "
                + ("every tokenizer above MaskGIT." if above else "not every tokenizer above MaskGIT."))
    if experiment == "causal":
        return (f"Level-2: categorical head {level2['ar']:.1f}, mixture head {level2['ar-gmm']:.1f}. The paper: "
                f"6.2 against 46.9, the mixture above; here: "
                f"{'the same' if level2['ar-gmm'] > level2['ar'] else 'not so'}.")
    return ""


def draw_curves(path, runs_dir, names, seeds, title):
    """Per run: seen / level-1 / level-2 over training, mean over seeds with ±1 std shading."""
    plt = runs.pyplot()
    fig, axes = plt.subplots(1, len(names), figsize=(3.3 * len(names), 3.1), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], names):
        curves = [split_curves(runs.read_metrics(os.path.join(runs_dir, name, f"seed{s}"))) for s in seeds]
        curves = [c for c in curves if len(c[0])]
        if not curves:
            continue
        length = min(len(steps) for steps, _ in curves)
        steps = curves[0][0][:length]
        for split, colour in runs.SPLIT_COLORS.items():
            values = np.stack([c[1][split][:length] for c in curves])
            ax.plot(steps, values.mean(0), color=colour, marker="o", markersize=3, label=split)
            ax.fill_between(steps, values.mean(0) - values.std(0), values.mean(0) + values.std(0),
                            color=colour, alpha=0.2, linewidth=0)
        runs.log_step_axis(ax)
        ax.set_ylim(-3, 103)
        ax.set_title(f"{name} ({len(curves)} seed{'s' * (len(curves) > 1)})", fontsize=9)
    axes[0, 0].set_ylabel("judged accuracy (%)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_novel_samples(path, runs_dir, names, per_cell=4):
    """Rows: real images, then each model (seed 0, last evaluation); columns: the novel compositions."""
    plt = runs.pyplot()
    novel = data.LEVEL1 + data.LEVEL2
    real, bits, _ = data.make_dataset(novel, per_cell, seed=123)
    rows = [("real", real, bits)]
    for name in names:
        file = os.path.join(runs_dir, name, "seed0", "samples.npz")
        if os.path.exists(file):
            samples = np.load(file)
            rows.append((name, samples["images"].astype(np.float32) / 255, samples["factors"]))
    size = data.IMAGE_SIZE + 2
    fig, axes = plt.subplots(len(rows), len(novel), figsize=(len(novel) * per_cell * 0.5 + 1, len(rows) * 0.65 + 0.5),
                             squeeze=False)
    for r, (name, images, factors) in enumerate(rows):
        codes = np.array([data.bits_to_code(f) for f in factors])
        for c, code in enumerate(novel):
            strip = np.full((data.IMAGE_SIZE, per_cell * size, 3), 0.16)
            for i, image in enumerate(images[codes == code][:per_cell]):
                strip[:, i * size:i * size + data.IMAGE_SIZE] = image
            axes[r, c].imshow(strip, interpolation="nearest")
            axes[r, c].set_xticks([])
            axes[r, c].set_yticks([])
            if r == 0:
                axes[r, c].set_title(f"{code}\n{probe.describe(code)}", fontsize=7)
        axes[r, 0].set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def time_course(runs_dir):
    """Per ladder model (seed 0, long run): level-2 at its peak, and at the end."""
    rows = ["| model | peak level-2 | at step | level-2 at the end | last step |", "|---|---|---|---|---|"]
    lines = []
    for name in LADDER:
        history = runs.read_metrics(os.path.join(runs_dir, "long", name, "seed0"))
        if not history:
            continue
        peak = max(history, key=lambda m: m["level2"])
        rows.append(f"| {name} | {100 * peak['level2']:.1f} | {peak['step']} | {100 * history[-1]['level2']:.1f} | "
                    f"{history[-1]['step']} |")
        collapsed = peak["level2"] - history[-1]["level2"] >= 0.1
        lines.append(f"{name}: " + ("never composes" if peak["level2"] == 0 else
                                    f"peaks at step {peak['step']}, then falls" if collapsed else "no collapse"))
    return rows, ("The paper: MaskGIT's level-2 peaks early and collapses, the continuous ones keep rising. Here: "
                  + "; ".join(lines) + ".")


def time_to_composition(runs_dir, seeds):
    """Per model and seed: the first evaluation where level-2 (composed) reaches 50% and 90%."""
    rows = ["| model | seed | 50%: step (wall time) | 90%: step (wall time) |", "|---|---|---|---|"]
    for name in LADDER + ["jepa_maskgit"]:
        for seed in seeds:
            history = runs.read_metrics(os.path.join(runs_dir, name, f"seed{seed}"))
            if history:
                cells = [first_reaching(history, mark) for mark in (0.5, 0.9)]
                rows.append(f"| {name} | {seed} | " + " | ".join(
                    f"{c[0]} ({minutes(c[1])})" if c else f"not reached by step {history[-1]['step']}" for c in cells)
                    + " |")
    return rows


def report(runs_dir, out_dir, budget, budget_name, step=None, command_line=None):
    os.makedirs(out_dir, exist_ok=True)
    seeds = budget["seeds"]
    for root, _, files in os.walk(runs_dir):
        if "metrics.jsonl" in files and any("fidelity" not in m for m in runs.read_metrics(root)):
            raise SystemExit(f"error: {root} lacks the fidelity and probe readings; "
                             f"rejudge it (python tools/rejudge.py {root}) or run it again")
    experiments = [
        ("ladder", "1. The ladder (Figure 3, Table 4)", LADDER),
        ("conditioning", "2. Conditioning, DiT (Figure 4)",
         ["dit", "dit-dropout", "dit-discrete", "dit-discrete-dropout"]),
        ("jepa", "3. The intervention: JEPA-MaskGIT (Figure 6)", ["maskgit", "jepa_maskgit"]),
        ("order", "4. MaskGIT's unmasking order (Table 3)", ["maskgit", "maskgit-random"]),
        ("tokenizer", "5. The tokenizer, DiT, MAR and GIVT (Figures 2 and 7)", TOKENIZERS),
        ("causal", "6. Causal order: a categorical and a mixture head (Table 2)", ["ar", "ar-gmm"]),
    ]
    index = [f"# Shapes2D, `--budget {budget_name}`", "",
             f"Written by `{command_line or f'python tools/reproduce.py --budget {budget_name}'}`: "
             f"{budget['steps']} steps per run, "
             f"seeds {', '.join(map(str, seeds))}, {budget['samples_per_comp']} samples per composition at each "
             f"evaluation; mean ± std over seeds of each run's "
             + (f"evaluation at step {step}" if step else "last evaluation") + " (%, judged by probe.py: seen, "
             "level-1 and level-2 are the composition reading; fidelity and probe beside it).", ""]
    for key, title, names in experiments:
        absent = [n for n in names if not finals(runs_dir, n, seeds)]
        if absent:
            index += [f"## {title}", "", f"Not run yet: {', '.join(absent)}.", ""]
            continue
        draw_curves(os.path.join(out_dir, f"{key}.png"), runs_dir, names, seeds, title)
        index += [f"## {title}", "", f"![{key}]({key}.png)", "", *table(runs_dir, names, seeds, budget, step=step), "",
                  reading(key, names, runs_dir, seeds, step), ""]
    index += ["## 7. Retrieval accuracy (Table 9)", "",
              *table(runs_dir, ["dit", "maskgit", "jepa_maskgit"], seeds, budget,
                     columns=("retrieval_1nn", "retrieval_5nn"), paper=False, step=step),
              "", "The paper (Table 9, 1-NN / 5-NN): DiT 27 / 36, MaskGIT 21 / 16, MaskGIT + JEPA 31 / 27.", ""]
    if step is None:                                     # the samples are kept from the last evaluation only
        draw_novel_samples(os.path.join(out_dir, "novel-samples.png"), runs_dir, LADDER + ["jepa_maskgit"])
        index += ["## What the novel compositions look like (Figure 12)", "", "![novel samples](novel-samples.png)",
                  ""]
    if any(runs.read_metrics(os.path.join(runs_dir, "long", n, "seed0")) for n in LADDER):
        rows, line = time_course(runs_dir)
        draw_curves(os.path.join(out_dir, "time-course.png"), os.path.join(runs_dir, "long"), LADDER, [0],
                    f"8. The time course: {budget['long_steps']} steps, seed 0")
        index += [f"## 8. The time course ({budget['long_steps']} steps, seed 0)", "",
                  "![time course](time-course.png)",
                  "", *rows, "", line, ""]
    index += ["## 9. Time to composition", "", *time_to_composition(runs_dir, seeds), ""]
    walls = [float(x) for root, _, files in os.walk(runs_dir) if "wall_seconds.txt" in files
             for x in open(os.path.join(root, "wall_seconds.txt")).read().split()]
    devices = sorted({json.load(open(os.path.join(root, "config.json")))["device"]
                      for root, _, files in os.walk(runs_dir) if "config.json" in files})
    index.insert(3, f"\nRun time: {sum(walls) / 60:.1f} min of wall time summed over {len(walls)} launches "
                    f"(runs at once share the machine), on {', '.join(devices)}.\n" if walls else
                 f"\nRun time: not recorded (no launch finished), on {', '.join(devices)}.\n")
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write("\n".join(index))
    return index


# ------------------------------------------------------------------------------------ main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", default="quick", choices=tuple(BUDGETS))
    parser.add_argument("--workers", type=int, default=None,
                        help=f"runs at once (default: {RUNS_PER_GPU} per GPU, at most one per CPU core; "
                             "1 without a GPU); they share the CPU cores")
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "mps", "cpu"))
    parser.add_argument("--runs", default=None, help="run folders (default runs/suite-<budget>)")
    parser.add_argument("--results", default=None, help="figures and tables (default runs/suite-<budget>/report)")
    parser.add_argument("--report-only", action="store_true", help="only redraw figures and tables")
    parser.add_argument("--step", type=int, default=None,
                        help="judge every run at its evaluation at this step, not its last (with --report-only)")
    args = parser.parse_args(argv)
    import torch
    gpus = torch.cuda.device_count() if args.device in ("auto", "cuda") else 0
    workers = args.workers if args.workers is not None else max(1, min(RUNS_PER_GPU * gpus, os.cpu_count() or 1))
    if workers < 1:
        parser.error(f"--workers must be a positive integer, got {workers}")
    if args.step is not None and args.step < 1:
        parser.error(f"--step must be a positive integer, got {args.step}")
    budget = BUDGETS[args.budget]
    runs_dir = args.runs or os.path.join(ROOT, "runs", f"suite-{args.budget}")
    out_dir = args.results or os.path.join(ROOT, "runs", f"suite-{args.budget}", "report")
    failed, start = [], time.time()
    if not args.report_only:
        jobs = [job(runs_dir, name, seed, budget, budget["steps"], args.device)
                for name in RUNS for seed in budget["seeds"]]   # experiment by experiment, the ladder first

        def continue_longer(finished_job):                        # seed 0 of the ladder goes on, 10x longer
            name, seed = finished_job[3], finished_job[4]
            if name not in LADDER or seed != 0 or finished_job[1] == budget["long_steps"]:
                return None
            short, long = finished_job[0], os.path.join(runs_dir, "long", name, "seed0")
            if not os.path.exists(long):
                shutil.copytree(short, long, ignore=shutil.ignore_patterns("wall_seconds.txt", "log.txt"))
            return job(runs_dir, name, 0, budget, budget["long_steps"], args.device, long)

        failed += run_all(jobs, workers, gpus, follow_up=continue_longer)
    command_line = " ".join(["python tools/reproduce.py", *(sys.argv[1:] if argv is None else argv)])
    index = report(runs_dir, out_dir, budget, args.budget, args.step, command_line)
    minutes = (time.time() - start) / 60
    print("\n".join(index[:4]))
    print(f"results in {os.path.relpath(out_dir)}/README.md; this call took {minutes:.1f} min")
    if failed:
        raise SystemExit(f"error: {len(failed)} run(s) failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
