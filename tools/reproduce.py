"""Every experiment in one command: the runs, then each question's table, built by collect.py.

    python tools/reproduce.py --budget quick     # short runs, the early stage
    python tools/reproduce.py --budget default   # each script's own budget, 3 seeds
    python tools/reproduce.py --budget full      # the long runs
    python tools/reproduce.py --budget default --list | parallel -j 2   # a command a line, for
                                                                        # your own scheduler

Runs go to runs/suite-<budget>/<question>/runs/<name>-seed<k>, so that each question's folder
reads like results/<question>/ and `python tools/collect.py` builds its table there. Running it
again skips finished runs and resumes interrupted ones; --report-only rebuilds the tables. What
each budget costs: results/costs/timings.md.
"""
import argparse
import collections
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

from tqdm import tqdm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
import collect  # noqa: E402
import runs  # noqa: E402
from worlds.shapes3d import SEEN_COUNTS  # noqa: E402

BUDGETS = {  # steps of every run, of the time-course runs (seed 0 only), evaluation and data sizes
    "tiny": dict(steps=3, long_steps=6, eval_every=2, samples_per_comp=2, train_per_comp=100,
                 batch_size=8, seeds=(0,)),
    "quick": dict(steps=150, long_steps=1500, eval_every=50, samples_per_comp=16,
                  train_per_comp=5000, batch_size=64, seeds=(0, 1, 2)),
    "default": dict(steps=2000, long_steps=8000, eval_every=250, samples_per_comp=32,
                    train_per_comp=5000, batch_size=64,
                    seeds=(0, 1, 2)),                  # what `python <script>` does
    "full": dict(steps=10000, long_steps=20000, eval_every=250, samples_per_comp=32,
                 train_per_comp=5000, batch_size=64, seeds=(0, 1, 2)),
}
GIVT_RECIPE = {"givt-pca-constant": ("givt.py", ["--tokenizer", "pca"]),   # GIVT's recipe in the
               "dit-pca-constant": ("dit.py", ["--tokenizer", "pca"]),     # new worlds, and its
               "maskgit-constant": ("maskgit.py", [])}                     # rivals' at its rate
RECIPE_STEPS = 2   # ... for twice the budget's steps: at 2,000 GIVT's seen was still rising
QUESTIONS = {  # question -> run name -> (script, its flags beyond the budget's[, times the
             # budget's steps]); the ladder first
    "ladder": {"maskgit": ("maskgit.py", []), "jepa_maskgit": ("jepa_maskgit.py", []),
               "givt": ("givt.py", []), "mar": ("mar.py", []), "dit": ("dit.py", [])},
    "tokenizers": {f"{model}-{tokenizer}": (f"{model}.py", ["--tokenizer", tokenizer])
                   for model in ("dit", "mar", "givt") for tokenizer in ("codebook", "pca")},
    "causal": {"ar": ("studies/ar.py", []),
               "ar-gmm-codebook": ("studies/ar.py", ["--head", "gmm", "--tokenizer", "codebook"]),
               "ar-gmm": ("studies/ar.py", ["--head", "gmm"])},
    "conditioning": {f"dit-{mode}": ("dit.py", ["--cond", mode])
                     for mode in ("dropout", "discrete", "discrete-dropout")},
    "unmasking": {"maskgit-random": ("maskgit.py", ["--unmask", "random"])},
    "shapes3d": {**{name: (f"{name}.py", ["--world", "shapes3d", "--lr-schedule", "cosine"])
                    for name in ("maskgit", "jepa_maskgit", "givt", "mar", "dit")},  # its recipe
                 **{f"{name}-seen{n}": (f"{name}.py", ["--world", "shapes3d", "--lr-schedule",
                                                       "cosine", "--seen-count", str(n)])
                    for name, counts in (("maskgit", SEEN_COUNTS[:-1]), ("dit", SEEN_COUNTS[:-1]),
                                         ("mar", SEEN_COUNTS[:4]))       # diversity: MAR to 48
                    for n in counts}},
    "clips": {name: (f"{name}.py", ["--world", "clips", "--lr-schedule", "cosine"])
              for name in ("maskgit", "jepa_maskgit", "givt", "mar", "dit")},  # the same recipe
    **{f"givt-{world}": {**{f"{name}-pca": (f"{name}.py", ["--world", world, "--lr-schedule",
                                                           "cosine", "--tokenizer", "pca"])
                            for name in ("givt", "dit")},              # GIVT's control, and DiT's
                         **{name: (script, ["--world", world, "--lr-schedule", "constant",
                                            *flags], RECIPE_STEPS)
                            for name, (script, flags) in GIVT_RECIPE.items()}}
       for world in ("shapes3d", "clips")},
    "objects": {f"objects-{cond}-{where}": ("studies/objects.py",
                                            ["--cond", cond, "--locality", where])
                for cond, where in (("all", "global"), ("one", "global"), ("one", "local"),
                                    ("all", "local"))},
}
LONG = "long-runs"           # the time course: seed 0 of the ladder's four rungs to long_steps
# one small run leaves a GPU waiting: an H200 trained dit.py 41 steps/s alone, 258 in all x8
RUNS_PER_GPU = 8


# ------------------------------------------------------------------------------------ runs
def command(script, flags, seed, budget, folder, steps, device):
    """The run's own command line, every budget setting spelled out (objects.py renders new images
    each step; a --world other than Shapes2D sizes its training set and evaluation itself)."""
    own = "--world" in flags
    data = ["--train-per-comp", str(budget["train_per_comp"])] * (script != "studies/objects.py"
                                                                  and not own)
    samples = ["--samples-per-comp", str(budget["samples_per_comp"])] * (not own)
    return [sys.executable, os.path.join(ROOT, script), "--steps", str(steps), "--seed", str(seed),
            "--eval-every", str(budget["eval_every"]), *samples, *data, "--batch-size",
            str(budget["batch_size"]), "--device", device, "--out", folder, *flags]


def jobs(runs_dir, budget, device):
    """[(folder, steps, command line)], question by question, seed by seed; then the time course:
    seed 0 of the ladder's four rungs to long_steps (a run of its own, from step 0)."""
    found = []
    for question, members in QUESTIONS.items():
        for seed in budget["seeds"]:
            for name, (script, flags, *times) in members.items():   # times: of the budget's steps
                folder = os.path.join(runs_dir, question, "runs", f"{name}-seed{seed}")
                steps = budget["steps"] * (times[0] if times else 1)
                found.append((folder, steps,
                              command(script, flags, seed, budget, folder, steps, device)))
    for name, (script, flags) in QUESTIONS["ladder"].items():
        folder = os.path.join(runs_dir, LONG, "runs", f"{name}-seed0")
        if name != "jepa_maskgit":
            found.append((folder, budget["long_steps"],
                          command(script, flags, 0, budget, folder, budget["long_steps"], device)))
    return found


def finished(folder, steps):
    metrics = runs.read_metrics(folder)
    return bool(metrics) and metrics[-1]["step"] == steps


def execute(job, slot, workers, gpus, deadline=None):
    """Run (or resume) one job in a subprocess; its output goes to log.txt in its folder. At the
    deadline (a time.time()) it is stopped as Ctrl-C stops it, keeping its last evaluation's
    checkpoint: (None, seconds). Otherwise (exit code, seconds)."""
    folder, steps, argv = job[:3]
    if finished(folder, steps):
        return 0, 0.0
    if os.path.exists(os.path.join(folder, "ckpt.pt")):
        argv = argv + ["--resume"]
    else:
        shutil.rmtree(folder, ignore_errors=True)               # nothing worth keeping: start again
    os.makedirs(folder, exist_ok=True)
    environment = dict(os.environ)
    if gpus:                                                     # runs spread over the GPUs
        environment["CUDA_VISIBLE_DEVICES"] = gpu_of(slot, gpus, os.environ)
    if workers > 1:                                              # runs share the CPU cores
        environment["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))
    start = time.time()
    with open(os.path.join(folder, "log.txt"), "a") as log:
        process = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                   env=environment,
                                   preexec_fn=hears_ctrl_c if os.name == "posix" else None)
        try:
            code = process.wait(None if deadline is None else max(0.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)                   # as Ctrl-C: it saves nothing new
            process.wait()
            code = None
    seconds = time.time() - start
    with open(os.path.join(folder, "wall_seconds.txt"), "a") as f:
        f.write(f"{seconds:.1f}\n")
    return code, seconds


def hears_ctrl_c():
    """In a run's process, before its script starts: Ctrl-C's default action. A suite started in
    the background (`nohup ... &`) has Ctrl-C ignored, its runs would inherit that, and the
    deadline's Ctrl-C would not stop them."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def gpu_of(slot, gpus, environment):
    """The GPU a slot's runs see: one of CUDA_VISIBLE_DEVICES's own entries where it is set (the
    GPUs a scheduler gave this job, which torch counts from 0), else slot % gpus."""
    visible = [gpu for gpu in environment.get("CUDA_VISIBLE_DEVICES", "").split(",") if gpu]
    return visible[slot % len(visible)] if visible else str(slot % gpus)


def run_all(todo, workers, gpus, deadline=None, failed=None):
    """Run jobs on `workers` slots at once. Returns the folders of failed runs (also appended to
    `failed`, where given, as they fail: kept when Ctrl-C ends the call). Ctrl-C stops the runs
    (each keeps its last checkpoint) and starts no more; so does the deadline (a time.time()),
    which stops them as Ctrl-C does."""
    todo, lock, stop = collections.deque(todo), threading.Lock(), threading.Event()
    failed = [] if failed is None else failed
    bar = tqdm(total=len(todo), desc="runs", unit="run")

    def worker(slot):
        while not stop.is_set() and (deadline is None or time.time() < deadline):
            with lock:
                if not todo:
                    return
                job = todo.popleft()
            code, seconds = execute(job, slot, workers, gpus, deadline)
            with lock:
                where = os.path.relpath(job[0], ROOT)
                if stop.is_set():
                    return
                if code is None:
                    tqdm.write(f"stopped {where} at the deadline; the same command resumes it")
                elif code:
                    failed.append(where)
                    tqdm.write(f"FAILED {where} (exit {code}); see {where}/log.txt")
                elif seconds:
                    tqdm.write(f"done   {where} in {seconds / 60:.1f} min")
                bar.update()

    threads = [threading.Thread(target=worker, args=(slot,), daemon=True)
               for slot in range(workers)]
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
def report(runs_dir):
    """Each question's table by collect.py,
    from the runs that have finished an evaluation; an index."""
    index = ["# The study, rebuilt", ""]
    for question in [*QUESTIONS, LONG]:
        folder = os.path.join(runs_dir, question)
        kept = os.path.join(folder, "runs")                  # collect reads the evaluated runs only
        names = os.listdir(kept) if os.path.isdir(kept) else []
        done = [n for n in names if os.path.exists(os.path.join(kept, n, "samples.npz"))]
        if not done:
            index.append(f"- {question}: no run has finished an evaluation yet")
            continue
        collect.write(folder, clock=None,
                      command=f"python tools/collect.py {os.path.relpath(folder, ROOT)}")
        index.append(f"- [{question}]({question}/table.md): {len(done)} runs")
    with open(os.path.join(runs_dir, "README.md"), "w") as f:
        f.write("\n".join(index) + "\n")
    return index


# ------------------------------------------------------------------------------------ main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", default="quick", choices=tuple(BUDGETS))
    parser.add_argument("--workers", type=int, default=None,
                        help=f"runs at once (default: {RUNS_PER_GPU} per GPU, at most one "
                             "per CPU core; "
                             "1 without a GPU); they share the CPU cores")
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "mps", "cpu"))
    parser.add_argument("--runs", default=None,
                        help="the runs and their tables (default runs/suite-<budget>)")
    parser.add_argument("--report-only", action="store_true", help="only rebuild the tables")
    parser.add_argument("--list", action="store_true",
                        help="print the study's commands, one a line, for a scheduler of your "
                             "own; run nothing")
    args = parser.parse_args(argv)
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be a positive integer, got {args.workers}")
    budget = BUDGETS[args.budget]
    runs_dir = args.runs or os.path.join(ROOT, "runs", f"suite-{args.budget}")
    todo = jobs(runs_dir, budget, args.device)
    if args.list:                                    # a command a line, for a scheduler of your own
        for job in todo:                             # quoted as a shell reads it, from the root
            print(shlex.join(["python", *(os.path.relpath(a, ROOT) if a.startswith(ROOT) else a
                                          for a in job[2][1:])]))
        return
    import torch
    gpus = torch.cuda.device_count() if args.device in ("auto", "cuda") else 0
    workers = args.workers or max(1, min(RUNS_PER_GPU * gpus, os.cpu_count() or 1))
    failed, start = [], time.time()
    if not args.report_only:
        failed = run_all(todo, workers, gpus)
    index = report(runs_dir)
    print("\n".join(index))
    print(f"tables in {os.path.relpath(runs_dir)}/<question>/table.md; this call took "
          f"{(time.time() - start) / 60:.1f} min")
    if failed:
        raise SystemExit(f"error: {len(failed)} run(s) failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
