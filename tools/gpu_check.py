"""The prepared GPU check: every generator's default trained at once on one GPU, timed and read.

    python tools/gpu_check.py --out runs/gpu-check          # the 7 defaults at once
    python tools/gpu_check.py --out runs/gpu-check --long   # and the long runs: maskgit.py,
                                                            # jepa_maskgit.py, dit.py at 10,000
                                                            # steps, seed 0
    python tools/gpu_check.py --budget tiny --device cpu --out /tmp/check   # end to end on a CPU

Every run is `python <script>.py` with the script's own budget (its defaults, spelled out; --steps
and the other budget flags change them for every run). For each run it prints the time to level-2
>= 90% (the first evaluation whose metrics.jsonl `level2` is >= 0.9: its step and `seconds`), its
wall time and its last readings. objects.py, another world with no level-2, is timed on its
headline reading instead: drawn exactly as asked with 4-8 objects asked (`beyond`; training shows
1-3). The runs go to <out>/runs/<name>; the summary to <out>/gpu.md (the table) and <out>/gpu.json
(the rows, and the provenance: device, torch, CUDA, commit).

The same command again skips finished runs and resumes stopped ones. Ctrl-C, or `timeout -s INT`,
stops the runs (each keeps its last evaluation's checkpoint) and the summary is written from what
they reached; --report-only writes it again from the run folders.
"""
import argparse
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
import reproduce  # noqa: E402

import runs  # noqa: E402

BUDGET_FLAGS = ("steps", "eval_every", "samples_per_comp", "train_per_comp", "batch_size")
TINY = {"steps": 2, "eval_every": 2, "samples_per_comp": 2, "train_per_comp": 8,  # seconds a run
        "batch_size": 4}
LONG = ("maskgit", "jepa_maskgit", "dit")   # the long runs: the two findings and their reference
LONG_STEPS = {"default": 10000, "tiny": 3}
TARGET = 0.9                                # time to this reading: level-2 (objects.py: beyond)
WARM_UP = {"steps": 1, "eval_every": 1, "samples_per_comp": 1, "train_per_comp": 1, "batch_size": 1}


# ----------------------------------------------------------------------------------- plan
def own_budget(model):
    """The script's own budget: its defaults, read from its parser (objects.py has no training set,
    so no train_per_comp)."""
    args = runs.script(model).parse([])[1]
    return {name: getattr(args, name, None) for name in BUDGET_FLAGS}


def budget_of(model, budget, overrides):
    """Each budget flag: the override where given, else the tiny budget's, else the script's own
    (reproduce.command leaves --train-per-comp out of objects.py's command)."""
    settings = own_budget(model)
    if budget == "tiny":
        settings.update(TINY)
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return settings


def plan(out, budget, overrides, long, long_steps, seed, device):
    """[(folder, steps, command line, name, script)]: the long runs first (the longest), then one
    run of every generator's default."""
    wanted = [(f"{model}-{long_steps}steps", model, long_steps) for model in LONG] if long else []
    wanted += [(model, model, None) for model in runs.MODELS]
    jobs = []
    for name, model, steps in wanted:
        settings = budget_of(model, budget, overrides)
        steps = steps or settings["steps"]
        if settings["eval_every"] > steps:
            raise SystemExit(f"error: --eval-every {settings['eval_every']} is larger than the "
                             f"{steps} steps of {name}")
        folder = os.path.join(out, "runs", name)
        argv = reproduce.command(f"{model}.py", [], seed, settings, folder, steps, device)
        jobs.append((folder, steps, argv, name, f"{model}.py"))
    return jobs


def shown(argv):
    """A command line as a person types it, paths relative to the repository."""
    words = [os.path.relpath(a, ROOT) if a.startswith(ROOT) else a for a in argv[1:]]
    return " ".join(["python", *words])


# ------------------------------------------------------------------------------------- run
def warm_up(out, device, gpus):
    """One 1-step maskgit.py run: fits the cached codebook and judges (.cache/) before the runs
    start, so no run's clock counts them, and fails fast where the device does not work."""
    folder = os.path.join(out, "warm-up")
    shutil.rmtree(folder, ignore_errors=True)
    argv = reproduce.command("maskgit.py", [], 0, WARM_UP, folder, WARM_UP["steps"], device)
    code, seconds = reproduce.execute((folder, WARM_UP["steps"], argv), 0, 1, gpus)
    if code:
        raise SystemExit(f"error: the warm-up run failed on {device} (exit {code}); "
                         f"see {folder}/log.txt")
    shutil.rmtree(folder)
    return seconds


# --------------------------------------------------------------------------------- summary
def wall_seconds(folder):
    """The run's process time, launch to exit, summed over its launches (reproduce.execute's)."""
    path = os.path.join(folder, "wall_seconds.txt")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return round(sum(float(word) for word in f.read().split()), 1)


def first_reaching(metrics, key, target=TARGET):
    """The first evaluation whose `key` reading is >= target: (step, seconds), or None."""
    return next(((m["step"], m["seconds"]) for m in metrics if m[key] >= target), None)


def readings(metrics, script):
    """The last evaluation's readings: Shapes2D's composed splits and the study's probe on 111;
    objects.py's drawn-exactly shares, 1-3 asked (trained) and 4-8 (beyond)."""
    last = metrics[-1]
    if script == "objects.py":
        return {"trained": last["trained"], "beyond": last["beyond"]}
    return {"seen": last["seen"], "level1": last["level1"], "level2": last["level2"],
            "probe_111": last["probe_acc"]["111"]}


def row(job, failed):
    """One run's line of the summary, every number read from its folder."""
    folder, steps, argv, name, script = job
    metrics = runs.read_metrics(folder)
    config = {}
    if os.path.exists(os.path.join(folder, "config.json")):
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)
    key = "beyond" if script == "objects.py" else "level2"
    if folder in failed:
        status = "failed (see log.txt)"
    elif metrics and metrics[-1]["step"] == steps:
        status = "finished"
    else:
        status = f"stopped at step {metrics[-1]['step']}" if metrics else "no evaluation"
    reached = first_reaching(metrics, key) if metrics else None
    best = max(metrics, key=lambda m: m[key]) if metrics else None
    return {"run": name, "script": script, "command": shown(argv), "steps": steps,
            "status": status, "device": config.get("device"),
            "gpu": config.get("provenance", {}).get("gpu"), "evaluations": len(metrics),
            "last_step": metrics[-1]["step"] if metrics else None, "target": key,
            "reached_step": reached and reached[0], "reached_seconds": reached and reached[1],
            "best": best and {"step": best["step"], "value": best[key]},
            "run_seconds": metrics[-1]["seconds"] if metrics else None,
            "wall_seconds": wall_seconds(folder),
            "readings": readings(metrics, script) if metrics else None}


def provenance(device, commit):
    """What the figures depend on: the run plumbing's provenance (commit, libraries, CPU) and the
    GPU's name, memory and CUDA. Where the tree has no git (a copied working tree), --commit."""
    import torch
    found = runs.provenance(device)
    if found["commit"] == "unknown":        # no git here: say so, or take --commit's word
        found.update(commit=commit or "unknown", uncommitted_changes="unknown (no git here)")
    found.update(cuda=torch.version.cuda, gpus=0, gpu_memory_gib=None)
    if device == "cuda":
        properties = torch.cuda.get_device_properties(0)
        found.update(gpus=torch.cuda.device_count(), cudnn=torch.backends.cudnn.version(),
                     gpu_memory_gib=round(properties.total_memory / 2 ** 30, 1))
    return found


def percent(value):
    return "–" if value is None else f"{100 * value:.1f}"


def seconds_text(value):
    return "–" if value is None else f"{value:.0f} s"


def table_line(r):
    """A markdown row: objects.py's trained and beyond readings stand under seen and level-2."""
    link = f"[`{r['script']}`](runs/{r['run']}/samples.png)"
    name = link if r["run"] == r["script"][:-3] else f"{link} `{r['run']}`"
    if r["reached_step"] is not None:
        reached = f"step {r['reached_step']}, {seconds_text(r['reached_seconds'])}"
    elif r["best"]:
        reached = f"not reached (best {percent(r['best']['value'])}% at step {r['best']['step']})"
    else:
        reached = "–"
    got = r["readings"] or {}
    if r["script"] == "objects.py":
        cells = [percent(got.get("trained")), "–", percent(got.get("beyond")), "–"]
        reached += " ¹"
    else:
        cells = [percent(got.get(k)) for k in ("seen", "level1", "level2", "probe_111")]
    status = "" if r["status"] == "finished" else f" ({r['status']})"
    return (f"| {name}{status} | {r['steps']} | {reached} | {seconds_text(r['run_seconds'])} | "
            f"{seconds_text(r['wall_seconds'])} | " + " | ".join(cells) + " |")


NOTES = ("Level-2 ≥ 90% at: the first evaluation whose composition reading on level-2 (`111`) "
         "is at least 90%, its step and the seconds since the run started (metrics.jsonl "
         "`seconds`: the training data, the steps and every evaluation until then). Run time: "
         "`seconds` at the last evaluation; wall: the process from launch to exit. The readings "
         "are the last evaluation's composition reading (%) per split, and the study's probe on "
         "`111`. The runs share the device, so each is slower than it would be alone.\n\n"
         "¹ objects.py has no level-2: its row reads its headline, drawn exactly as asked (%), "
         "with 1-3 objects asked (the trained counts) under seen and 4-8 asked under level-2; "
         "its time is to 4-8 asked ≥ 90%.\n\n"
         "Each run's folder holds its config.json (device and provenance), metrics.jsonl, "
         "samples.png and (the Shapes2D generators) curves.png; gpu.json holds these rows and "
         "the full provenance.")
HEADER = ("| run | steps | level-2 ≥ 90% at | run time | wall | seen | level-1 | level-2 "
          "| `111` probe |\n|---|---|---|---|---|---|---|---|---|")


def markdown(summary):
    """gpu.md: where and how it ran, the table, what its columns mean."""
    p = summary["provenance"]
    cuda = f", CUDA {p['cuda']}" if p["cuda"] else ""
    memory = f", {p['gpu_memory_gib']} GiB" if p["gpu_memory_gib"] else ""
    where = (f"Written by `{summary['command']}` on {p['gpu'] or p['cpu']}{memory} "
             f"(torch {p['torch']}{cuda}; {p['cpu_count']} CPU cores), commit `{p['commit']}` "
             f"(uncommitted changes: {p['uncommitted_changes']}); {summary['workers']} runs at "
             f"once on the device `{summary['device']}`, {summary['minutes']:.1f} min in all "
             f"(the warm-up's {seconds_text(summary['warm_up_seconds'])} included).")
    title = f"# Every generator's default at once on one {'GPU' if p['gpu'] else 'machine'}"
    rows = "\n".join(map(table_line, summary["runs"]))
    return f"{title}\n\n{where}\n\n{HEADER}\n{rows}\n\n{NOTES}\n"


def write_summary(out, jobs, failed, meta):
    rows = [row(job, failed) for job in jobs]
    summary = dict(meta, runs=rows)
    with open(os.path.join(out, "gpu.json"), "w") as f:
        json.dump(summary, f, indent=2)
    with open(os.path.join(out, "gpu.md"), "w") as f:
        f.write(markdown(summary))
    return rows


def print_rows(rows):
    for r in rows:
        got = r["readings"] or {}
        if r["reached_step"] is not None:
            reached = f"step {r['reached_step']} ({r['reached_seconds']:.1f} s)"
        else:
            reached = "not reached"
        if r["script"] == "objects.py":
            read = f"exact 1-3 {percent(got.get('trained'))} | 4-8 {percent(got.get('beyond'))}"
        else:
            read = (f"seen {percent(got.get('seen'))} | level-1 {percent(got.get('level1'))} | "
                    f"level-2 {percent(got.get('level2'))} | "
                    f"111 probe {percent(got.get('probe_111'))}")
        label = "4-8 asked" if r["target"] == "beyond" else "level-2"
        print(f"{r['run']:<22} {r['status']:<10} {label} >= 90% at {reached} | wall "
              f"{seconds_text(r['wall_seconds'])} | {read}")


# ------------------------------------------------------------------------------------ main
def positive(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def check_device(parser, device):
    """A clear refusal where the asked device is not here."""
    import torch
    if device == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device cuda: no CUDA GPU is visible here (torch {torch.__version__}, "
                     f"built for CUDA {torch.version.cuda}); to try the check on a CPU: "
                     "--budget tiny --device cpu")
    mps = getattr(torch.backends, "mps", None)
    if device == "mps" and not (mps is not None and mps.is_available()):
        parser.error("--device mps: no Apple GPU (mps) is available here; "
                     "to try the check on a CPU: --budget tiny --device cpu")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the runs (<out>/runs) and the summary")
    parser.add_argument("--device", default="cuda", choices=("cuda", "mps", "cpu"))
    parser.add_argument("--budget", default="default", choices=("default", "tiny"),
                        help="default: each script's own; tiny: 2 steps, seconds a run on a CPU")
    for name in BUDGET_FLAGS:
        parser.add_argument(f"--{name.replace('_', '-')}", type=positive, default=None,
                            help="for every run, instead of the budget's")
    parser.add_argument("--long", action="store_true",
                        help=f"also {', '.join(LONG)} at --long-steps, seed 0 (the long runs)")
    parser.add_argument("--long-steps", type=positive, default=None,
                        help=f"steps of the long runs (default {LONG_STEPS['default']}; "
                             f"tiny budget {LONG_STEPS['tiny']})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=positive, default=None,
                        help="runs at once (default: all of them, on the one device)")
    parser.add_argument("--commit", default=None,
                        help="the commit to record where the tree has no git (a copied tree)")
    parser.add_argument("--report-only", action="store_true",
                        help="only write the summary again from the run folders")
    args = parser.parse_args(argv)
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        parser.error(f"--out {args.out} is a file, not a folder")
    if not args.report_only:
        check_device(parser, args.device)
    import torch
    out = os.path.abspath(args.out)
    overrides = {name: getattr(args, name) for name in BUDGET_FLAGS}
    long_steps = args.long_steps or LONG_STEPS[args.budget]
    jobs = plan(out, args.budget, overrides, args.long, long_steps, args.seed, args.device)
    workers = args.workers or len(jobs)
    gpus = torch.cuda.device_count() if args.device == "cuda" else 0
    previous = os.path.join(out, "gpu.json")
    if args.report_only:                    # the call that ran: its command, timing, provenance
        if not os.path.exists(previous):
            parser.error(f"--report-only: no gpu.json in {args.out}; run the check there first")
        with open(previous) as f:
            meta = {k: v for k, v in json.load(f).items() if k != "runs"}
    else:
        os.makedirs(out, exist_ok=True)
        command = shown([sys.executable, __file__, *(sys.argv[1:] if argv is None else argv)])
        meta = {"command": command, "device": args.device, "budget": args.budget,
                "workers": workers, "provenance": provenance(args.device, args.commit),
                "target": TARGET, "warm_up_seconds": None, "minutes": 0.0}
        write_summary(out, jobs, [], meta)  # at once: --report-only finds it after any stop
    failed, interrupted, start = [], False, time.time()
    if not args.report_only:
        print(f"{len(jobs)} runs at once on {args.device} ({meta['provenance']['gpu'] or 'cpu'}); "
              f"out: {out}")
        try:
            meta["warm_up_seconds"] = round(warm_up(out, args.device, gpus), 1)
        except KeyboardInterrupt:
            raise SystemExit("\ninterrupted in the warm-up, before any run started") from None
        try:
            failed = reproduce.run_all(jobs, workers, gpus)
        except SystemExit:          # Ctrl-C or timeout -s INT: the runs kept their checkpoints
            interrupted = True
        failed = [] if interrupted else [os.path.normpath(os.path.join(ROOT, f)) for f in failed]
        meta["minutes"] = round((time.time() - start) / 60, 2)
    rows = write_summary(out, jobs, failed, meta)
    print_rows(rows)
    print(f"summary: {os.path.join(out, 'gpu.md')} and gpu.json")
    if interrupted:
        raise SystemExit("interrupted; the same command again resumes the runs")
    if failed:
        raise SystemExit(f"error: {len(failed)} run(s) failed; see log.txt in "
                         + ", ".join(os.path.relpath(f, out) for f in failed))


if __name__ == "__main__":
    main()
