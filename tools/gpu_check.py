"""The prepared GPU check: what a user asks of one GPU, measured per generator and read from files.

    python tools/gpu_check.py --out runs/gpu-check                         # the check
    python tools/gpu_check.py --time-course --minutes 9 --out runs/gpu     # the time course
    python tools/gpu_check.py --budget tiny --device cpu --out /tmp/check  # end to end on a CPU

The check, for every generator (--models: some of them):
- its speed: its own training step (its defaults, no evaluation) timed alone on the device, then
  --at-once copies of it at once (steps/s each, and in all); its peak memory alone; on a CUDA GPU
  its waits a step, the synchronizing operations torch.cuda.set_sync_debug_mode reports;
- its default run, all of them at once: the time to level-2 >= 90% (the first evaluation whose
  metrics.jsonl `level2` is >= 0.9: its step and `seconds`), its wall time, steps/s and last
  readings. objects.py, another world with no level-2, is timed on its headline reading instead:
  drawn exactly as asked with 4-8 objects asked (`beyond`; training shows 1-3).

--time-course runs the study's time course with the long-budget recipe (RECIPE): maskgit.py and
dit.py to 60,000 steps (seed 0) first, then the ladder (maskgit, jepa_maskgit, givt, mar, dit) to
10,000 steps, seed 0, 1, then 2; as many at once as the machine has CPU cores (each run's host
work takes one), so the long runs never wait.

Every run is `python <script>.py` with the script's own budget (its defaults, spelled out; --steps
and the other budget flags change them for every run). The runs go to <out>/runs/<name>; the
summary to <out>/gpu.md (the tables) and <out>/gpu.json (the rows, the speeds and the provenance:
device, torch, CUDA, commit).

The same command again skips finished runs and resumes stopped ones. --minutes, Ctrl-C or
`timeout -s INT` stop the runs (each keeps its last evaluation's checkpoint, ckpt.pt, which git
does not track) and the summary is written from what they reached; --report-only writes it again
from the run folders.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
import reproduce  # noqa: E402

import runs  # noqa: E402

# The long-budget recipe: the flags every time-course run adds. The DiT controls at 10,000 steps
# chose it: a rate decayed to 0 holds 111, a constant one or fresh images do not (long-runs).
RECIPE = ["--lr-schedule", "cosine"]
COURSE = ((("maskgit", "dit"), 60000, (0,)),                        # the paper's budget, seed 0
          (("maskgit", "jepa_maskgit", "givt", "mar", "dit"), 10000, (0, 1, 2)))   # the ladder
COURSE_TINY = {60000: 6, 10000: 3}          # the tiny budget's steps for them
BUDGET_FLAGS = ("steps", "eval_every", "samples_per_comp", "train_per_comp", "batch_size")
TINY = {"steps": 2, "eval_every": 2, "samples_per_comp": 2, "train_per_comp": 8,  # seconds a run
        "batch_size": 4}
TARGET = 0.9                                # time to this reading: level-2 (objects.py: beyond)
WARM_UP = {"steps": 1, "eval_every": 1, "samples_per_comp": 1, "train_per_comp": 1, "batch_size": 1}
# the speed probe: steps before the clock starts, seconds timed, its (small) training set: a
# step's cost does not depend on the training set's size
PROBE = {"default": dict(warm_up=10, seconds=10.0, train_per_comp=100, batch_size=None),
         "tiny": dict(warm_up=2, seconds=0.5, train_per_comp=8, batch_size=4)}
AT_ONCE = {"default": reproduce.RUNS_PER_GPU, "tiny": 2}
GRACE = 20                  # seconds before --minutes ends: the runs stop, the summary is written


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


def job(out, name, model, settings, steps, seed, device, flags=()):
    """(folder, steps, command line, name, script): one run."""
    if settings["eval_every"] > steps:
        raise SystemExit(f"error: --eval-every {settings['eval_every']} is larger than the "
                         f"{steps} steps of {name}")
    folder = os.path.join(out, "runs", name)
    argv = reproduce.command(runs.script_file(model), list(flags), seed, settings, folder, steps,
                             device)
    return folder, steps, argv, name, runs.script_file(model)


def plan(out, budget, overrides, seed, device, models=runs.MODELS):
    """The check's runs: one of each generator's default."""
    jobs = []
    for model in models:
        settings = budget_of(model, budget, overrides)
        jobs.append(job(out, model, model, settings, settings["steps"], seed, device))
    return jobs


def course_plan(out, budget, overrides, device, models=runs.MODELS):
    """The time course's runs, each with RECIPE: the long runs first (the longest), then the
    ladder seed by seed."""
    jobs = []
    for members, steps, seeds in COURSE:
        steps = COURSE_TINY[steps] if budget == "tiny" else steps
        for seed in seeds:
            for model in [m for m in members if m in models]:
                jobs.append(job(out, f"{model}-{steps}steps-seed{seed}", model,
                                budget_of(model, budget, overrides), steps, seed, device, RECIPE))
    return jobs


def shown(argv):
    """A command line as a person types it, paths relative to the repository."""
    words = [os.path.relpath(a, ROOT) if a.startswith(ROOT) else a for a in argv[1:]]
    return " ".join(["python", *words])


# ----------------------------------------------------------------------------------- speed
class Timed(Exception):
    """The probe's clock has run out: training stops here."""


def probe(model, device, settings, path):
    """Time one generator's own training step on device, in a process of its own: its defaults
    (but PROBE's training set and batch size, where it sets them), no evaluation. The steps after
    settings["warm_up"] that fit in settings["seconds"], each whole (from one step's learning
    rate to the next's); writes {steps, seconds, steps_per_second, waits_per_step,
    peak_memory_gib} to path, the last two None off CUDA."""
    import torch
    module = runs.script(model)
    flags = ["--steps", str(10 ** 9), "--eval-every", str(10 ** 9), "--device", device,
             "--out", os.path.splitext(path)[0]]
    if model != "objects":
        flags += ["--train-per-comp", str(settings["train_per_comp"])]
    if settings.get("batch_size"):
        flags += ["--batch-size", str(settings["batch_size"])]
    config = dict(vars(module.parse(flags)[1]), model=module.NAME)
    runs.start_clock(config)
    cuda = torch.device(device).type == "cuda"
    marks, learning_rate, caught = [], runs.learning_rate, []

    def timed(config, step):
        if step >= settings["warm_up"] and (not marks or marks[-1][0] != step):   # once a step
            if not marks or time.perf_counter() - marks[0][1] >= settings["seconds"]:
                if cuda:
                    torch.cuda.set_sync_debug_mode(0)
                    torch.cuda.synchronize()                        # the steps' work is done
                marks.append((step, time.perf_counter(), len(caught)))
                if len(marks) == 2:
                    raise Timed
                if cuda:
                    torch.cuda.reset_peak_memory_stats()
                    torch.cuda.set_sync_debug_mode("warn")          # each wait: a warning
        return learning_rate(config, step)
    runs.learning_rate = timed
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module.train(config)
    except Timed:
        pass
    finally:
        runs.learning_rate = learning_rate
    (first, start, seen), (last, end, _) = marks
    steps = last - first
    found = {"steps": steps, "seconds": round(end - start, 3),
             "steps_per_second": round(steps / (end - start), 2),
             "waits_per_step": round(waits(caught[seen:]) / steps, 2) if cuda else None,
             "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2 ** 30, 3)
             if cuda else None}
    with open(path, "w") as f:
        json.dump(found, f)
    return found


def waits(caught):
    """How many of the warnings caught are torch.cuda.set_sync_debug_mode's, one a wait."""
    return sum("called a synchronizing CUDA operation" in str(w.message) for w in caught)


def probes(model, count, device, settings, folder):
    """`count` probes of model at once, each a process of its own: their findings."""
    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, f"{model}-{count}at-once-{i}.json") for i in range(count)]
    code = (f"import json, sys; sys.path.insert(0, {HERE!r}); import gpu_check; "
            "gpu_check.probe(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4])")
    environment = dict(os.environ, OMP_NUM_THREADS=str(max(1, (os.cpu_count() or 1) // count)))
    log = os.path.join(folder, f"{model}-{count}at-once.log")
    with open(log, "w") as output:
        processes = [subprocess.Popen([sys.executable, "-c", code, model, device,
                                       json.dumps(settings), path], cwd=ROOT, env=environment,
                                      stdout=output, stderr=subprocess.STDOUT) for path in paths]
        if any([process.wait() for process in processes]):
            raise SystemExit(f"error: the speed probe of {model} failed; see {log}")
    found = []
    for path in paths:
        with open(path) as f:
            found.append(json.load(f))
    return found


def speeds(out, models, device, at_once, budget):
    """Per generator, its probe alone, then at_once of it at once: {model: {alone, at_once,
    each, in_all}} (steps/s), nothing else on the device meanwhile."""
    found = {}
    for model in models:
        alone = probes(model, 1, device, PROBE[budget], os.path.join(out, "speed"))[0]
        found[model] = {"alone": alone, "at_once": at_once, "each": None, "in_all": None}
        if at_once > 1:
            together = [p["steps_per_second"] for p in
                        probes(model, at_once, device, PROBE[budget], os.path.join(out, "speed"))]
            found[model].update(each=round(sum(together) / at_once, 2),
                                in_all=round(sum(together), 2))
        print(f"{model:<14} {alone['steps_per_second']:.1f} steps/s alone"
              + (f", {found[model]['in_all']:.1f} in all with {at_once} at once"
                 if at_once > 1 else ""))
    return found


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
    if script == "studies/objects.py":
        return {"trained": last["trained"], "beyond": last["beyond"]}
    return {"seen": last["seen"], "level1": last["level1"], "level2": last["level2"],
            "probe_111": last["probe_acc"]["111"]}


def status_of(folder, steps, metrics, failed):
    if folder in failed:
        return "failed (see log.txt)"
    if metrics and metrics[-1]["step"] == steps:
        return "finished"
    if metrics:
        return f"stopped at step {metrics[-1]['step']}"
    return "no evaluation" if os.path.isdir(folder) else "not started"


def row(job, failed):
    """One run's line of the summary, every number read from its folder (the command: as planned,
    or as a summary recorded it)."""
    folder, steps, argv, name, script = job
    metrics = runs.read_metrics(folder)
    config = {}
    if os.path.exists(os.path.join(folder, "config.json")):
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)
    key = "beyond" if script == "studies/objects.py" else "level2"
    reached = first_reaching(metrics, key) if metrics else None
    best = max(metrics, key=lambda m: m[key]) if metrics else None
    seconds = metrics[-1]["seconds"] if metrics else None
    command = argv if isinstance(argv, str) else shown(argv)
    return {"run": name, "script": script, "command": command, "steps": steps,
            "status": status_of(folder, steps, metrics, failed),
            "device": config.get("device"), "gpu": config.get("provenance", {}).get("gpu"),
            "evaluations": len(metrics), "last_step": metrics[-1]["step"] if metrics else None,
            "target": key, "reached_step": reached and reached[0],
            "reached_seconds": reached and reached[1],
            "best": best and {"step": best["step"], "value": best[key]}, "run_seconds": seconds,
            "steps_per_second": round(metrics[-1]["step"] / seconds, 1) if seconds else None,
            "wall_seconds": wall_seconds(folder),
            "readings": readings(metrics, script) if metrics else None}


def provenance(device, commit):
    """What the figures depend on: the run plumbing's provenance (commit, libraries, CPU) and, on a
    CUDA GPU, its name, memory and CUDA. Where the tree has no git (a copied tree), --commit."""
    import torch
    found = runs.provenance(device)
    if found["commit"] == "unknown":        # no git here: say so, or take --commit's word
        found.update(commit=commit or "unknown", uncommitted_changes="unknown (no git here)")
    found.update(cuda=None, gpus=0, gpu_memory_gib=None)
    if device == "cuda":
        properties = torch.cuda.get_device_properties(0)
        found.update(cuda=torch.version.cuda, gpus=torch.cuda.device_count(),
                     cudnn=torch.backends.cudnn.version(),
                     gpu_memory_gib=round(properties.total_memory / 2 ** 30, 1))
    return found


def percent(value):
    return "–" if value is None else f"{100 * value:.1f}"


def seconds_text(value):
    return "–" if value is None else f"{value:.0f} s"


def number(value, unit=""):
    return "–" if value is None else f"{value:g}{unit}"


def table_line(r):
    """A markdown row: objects.py's trained and beyond readings stand under seen and level-2."""
    link = f"[`{r['script']}`](runs/{r['run']}/samples.png)"
    name = link if r["run"] == os.path.basename(r["script"])[:-3] else f"{link} `{r['run']}`"
    if r["reached_step"] is not None:
        reached = f"step {r['reached_step']}, {seconds_text(r['reached_seconds'])}"
    elif r["best"]:
        reached = f"not reached (best {percent(r['best']['value'])}% at step {r['best']['step']})"
    else:
        reached = "–"
    got = r["readings"] or {}
    if r["script"] == "studies/objects.py":
        cells = [percent(got.get("trained")), "–", percent(got.get("beyond")), "–"]
        reached += " ¹"
    else:
        cells = [percent(got.get(k)) for k in ("seen", "level1", "level2", "probe_111")]
    status = "" if r["status"] == "finished" else f" ({r['status']})"
    return (f"| {name}{status} | {r['steps']} | {reached} | {seconds_text(r['run_seconds'])} | "
            f"{number(r.get('steps_per_second'))} | {seconds_text(r['wall_seconds'])} | "
            + " | ".join(cells) + " |")


def speed_line(model, found):
    alone = found["alone"]
    return (f"| `{model}.py` | {number(alone['steps_per_second'])} | {number(found['each'])} | "
            f"{number(found['in_all'])} | {number(alone['peak_memory_gib'], ' GiB')} | "
            f"{number(alone['waits_per_step'])} |")


NOTES = ("Level-2 ≥ 90% at: the first evaluation whose composition reading on level-2 (`111`) "
         "is at least 90%, its step and the seconds since the run started (metrics.jsonl "
         "`seconds`: the training data, the steps and every evaluation until then). Run time: "
         "`seconds` at the last evaluation, and steps/s its steps over it (evaluations "
         "included); wall: the process from launch to exit, over every launch. The readings "
         "are the last evaluation's composition reading (%) per split, and the study's probe on "
         "`111`. The runs share the device, so each is slower than it would be alone.\n\n"
         "¹ objects.py has no level-2: its row reads its headline, drawn exactly as asked (%), "
         "with 1-3 objects asked (the trained counts) under seen and 4-8 asked under level-2; "
         "its time is to 4-8 asked ≥ 90%.\n\n"
         "Each run's folder holds its config.json (device and provenance), metrics.jsonl, "
         "samples.png and (the Shapes2D generators) curves.png; a run that did not finish, its "
         "last evaluation's ckpt.pt (the same command resumes it); gpu.json holds these rows "
         "and the full provenance.")
SPEED_NOTES = ("Each generator's own training step (its defaults{batch}; a training set of {train} "
               "images a composition, which a step's cost does not depend on; no evaluation), "
               "timed over {seconds:g} s after {warm} steps: alone on the device, then {n} "
               "copies of it at once, each a process of its own (steps/s each, their mean; in "
               "all, their sum). Peak memory: torch.cuda.max_memory_allocated over the timed "
               "steps, alone. Waits a step: the synchronizing CUDA operations "
               "torch.cuda.set_sync_debug_mode reports in the timed steps, alone. Neither is "
               "read off a CUDA GPU (–).")
HEADER = ("| run | steps | level-2 ≥ 90% at | run time | steps/s | wall | seen | level-1 | "
          "level-2 | `111` probe |\n|---|---|---|---|---|---|---|---|---|---|")
SPEED_HEADER = ("| generator | steps/s alone | steps/s each, {n} at once | in all | peak memory "
                "| waits a step |\n|---|---|---|---|---|---|")


def markdown(summary):
    """gpu.md: where and how it ran, the tables, what their columns mean."""
    p = summary["provenance"]
    cuda = f", CUDA {p['cuda']}" if p["cuda"] else ""
    memory = f", {p['gpu_memory_gib']} GiB" if p["gpu_memory_gib"] else ""
    where = (f"Written by `{summary['command']}` on {p['gpu'] or p['cpu']}{memory} "
             f"(torch {p['torch']}{cuda}; {p['cpu_count']} CPU cores), commit `{p['commit']}` "
             f"(uncommitted changes: {p['uncommitted_changes']}); {summary['workers']} runs at "
             f"once on the device `{summary['device']}`, {summary['minutes']:.1f} min in all "
             f"(the warm-up's {seconds_text(summary['warm_up_seconds'])} included).")
    machine = "GPU" if p["gpu"] else "machine"
    if summary["mode"] == "time course":
        title = f"# The time course on one {machine}"
        where += f" Every run adds the long-budget recipe `{' '.join(summary['recipe'])}`."
    else:
        title = f"# Every generator on one {machine}: its speed and its default run"
    parts = [title, where]
    if summary.get("speed"):
        probe = PROBE[summary["budget"]]
        n = summary["at_once"]
        parts += ["## Speed", SPEED_HEADER.format(n=n) + "\n" + "\n".join(
            speed_line(model, found) for model, found in summary["speed"].items()),
            SPEED_NOTES.format(train=probe["train_per_comp"], seconds=probe["seconds"],
                               warm=probe["warm_up"], n=n, batch=f", batch size "
                               f"{probe['batch_size']}" if probe["batch_size"] else "")]
        parts.append("## The runs")
    parts += [HEADER + "\n" + "\n".join(map(table_line, summary["runs"])), NOTES]
    return "\n\n".join(parts) + "\n"


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
        if r["script"] == "studies/objects.py":
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


def minutes(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of minutes, got {text!r}")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of minutes, got {value}")
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


def report_only(parser, out):
    """The jobs, meta and failures a previous call recorded in gpu.json: its own plan."""
    previous = os.path.join(out, "gpu.json")
    if not os.path.exists(previous):
        parser.error(f"--report-only: no gpu.json in {out}; run the check there first")
    with open(previous) as f:
        summary = json.load(f)
    jobs = [(os.path.join(out, "runs", r["run"]), r["steps"], r["command"], r["run"], r["script"])
            for r in summary["runs"]]
    failed = [job[0] for job, r in zip(jobs, summary["runs"]) if r["status"].startswith("failed")]
    return jobs, {k: v for k, v in summary.items() if k != "runs"}, failed


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
    parser.add_argument("--models", nargs="+", choices=runs.MODELS, default=list(runs.MODELS),
                        metavar="MODEL",
                        help="the generators to check (default: all)")
    parser.add_argument("--at-once", type=positive, default=None,
                        help=f"copies of each generator's step timed at once (default "
                             f"{AT_ONCE['default']}; tiny budget {AT_ONCE['tiny']}; 1: alone only)")
    parser.add_argument("--time-course", action="store_true",
                        help="the time course with RECIPE instead of the check: maskgit and dit "
                             "to 60,000 steps, then the ladder to 10,000, seeds 0-2")
    parser.add_argument("--minutes", type=minutes, default=None,
                        help="stop the runs in time to end within this many minutes; each keeps "
                             "its last evaluation's checkpoint")
    parser.add_argument("--seed", type=int, default=0, help="the check's runs' seed")
    parser.add_argument("--workers", type=positive, default=None,
                        help="runs at once (default: all the check's; the time course's, one a "
                             "CPU core)")
    parser.add_argument("--commit", default=None,
                        help="the commit to record where the tree has no git (a copied tree)")
    parser.add_argument("--report-only", action="store_true",
                        help="only write the summary again from the run folders")
    args = parser.parse_args(argv)
    start = time.time()
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        parser.error(f"--out {args.out} is a file, not a folder")
    out = os.path.abspath(args.out)
    if args.report_only:                    # the call that ran: its plan, timing, provenance
        jobs, meta, failed = report_only(parser, args.out)
        print_rows(write_summary(out, jobs, failed, meta))
        print(f"summary: {os.path.join(out, 'gpu.md')} and gpu.json")
        return
    check_device(parser, args.device)
    if args.time_course and args.steps is not None:
        parser.error("--steps: the time course's runs have their own (60000 and 10000 steps)")
    import torch
    overrides = {name: getattr(args, name) for name in BUDGET_FLAGS}
    if args.time_course:
        jobs = course_plan(out, args.budget, overrides, args.device, args.models)
    else:
        jobs = plan(out, args.budget, overrides, args.seed, args.device, args.models)
    workers = args.workers or (min(len(jobs), os.cpu_count() or 1) if args.time_course
                               else len(jobs))
    gpus = torch.cuda.device_count() if args.device == "cuda" else 0
    deadline = None if args.minutes is None else start + 60 * args.minutes - GRACE
    os.makedirs(out, exist_ok=True)
    command = shown([sys.executable, __file__, *(sys.argv[1:] if argv is None else argv)])
    meta = {"command": command, "mode": "time course" if args.time_course else "check",
            "device": args.device, "budget": args.budget, "workers": workers,
            "recipe": RECIPE if args.time_course else None, "provenance":
            provenance(args.device, args.commit), "target": TARGET, "warm_up_seconds": None,
            "minutes": 0.0, "speed": None, "at_once": args.at_once or AT_ONCE[args.budget]}
    write_summary(out, jobs, [], meta)      # at once: --report-only finds it after any stop
    print(f"{len(jobs)} runs, {workers} at once, on {args.device} "
          f"({meta['provenance']['gpu'] or 'cpu'}); out: {out}")
    try:
        meta["warm_up_seconds"] = round(warm_up(out, args.device, gpus), 1)
    except KeyboardInterrupt:
        raise SystemExit("\ninterrupted in the warm-up, before any run started") from None
    failed, interrupted = [], False
    try:
        if not args.time_course:
            meta["speed"] = speeds(out, args.models, args.device, meta["at_once"], args.budget)
    except KeyboardInterrupt:
        interrupted = True
    if not interrupted:
        try:
            reproduce.run_all(jobs, workers, gpus, deadline, failed)
        except SystemExit:                  # Ctrl-C: the runs kept their checkpoints
            interrupted = True
    failed = [os.path.normpath(os.path.join(ROOT, f)) for f in failed]
    meta["minutes"] = round((time.time() - start) / 60, 2)
    rows = write_summary(out, jobs, failed, meta)
    print_rows(rows)
    print(f"summary: {os.path.join(out, 'gpu.md')} and gpu.json")
    if interrupted:
        raise SystemExit("interrupted; the same command again resumes the runs")
    if failed:
        raise SystemExit(f"error: {len(failed)} run(s) failed; see log.txt in "
                         + ", ".join(os.path.relpath(f, out) for f in failed))
    if args.minutes is not None and any(r["status"] != "finished" for r in rows):
        print(f"stopped at --minutes {args.minutes:g}; the same command again resumes the rest")


if __name__ == "__main__":
    main()
