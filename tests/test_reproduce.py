"""tools/reproduce.py at its tiny budget: every run, figure and table; skip what is done, resume
what is not.

The suite is called in this process (its main(argv), as its command line does) where its exit on
Ctrl-C is not under test; its runs are its own subprocesses either way."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import elsewhere
import pytest

import scripts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tools", "reproduce.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))


def suite(tmp_path, *flags):
    """tools/reproduce.py --budget tiny ... in this process: returns normally where the command
    exits 0; its refusals and failures raise SystemExit, as they end the command."""
    import reproduce
    reproduce.main(["--budget", "tiny", "--device", "cpu", "--workers", "2", "--runs",
                    str(tmp_path / "runs"), *map(str, flags)])


def launches(folder):
    path = folder / "wall_seconds.txt"
    return len(path.read_text().split()) if path.exists() else 0


SOME = {"ladder": ["dit"], "tokenizers": ["dit-pca"], "causal": ["ar-gmm"],
        "objects": ["objects-one-local"]}           # the tiny suite's run of every kind, not all 26


def test_the_tiny_suite_runs_everything_then_skips_and_resumes(tmp_path, monkeypatch):
    import reproduce
    monkeypatch.setattr(reproduce, "QUESTIONS", {q: {n: reproduce.QUESTIONS[q][n] for n in names}
                                                 for q, names in SOME.items()})
    runs = tmp_path / "runs"
    # an interrupted run: its checkpoint stops at step 2 of the 3 the budget asks for
    interrupted = runs / "tokenizers" / "runs" / "dit-pca-seed0"
    scripts.main("dit.py", "--steps", "2", "--eval-every", "2", "--samples-per-comp", "2",
                 "--train-per-comp", "100", "--batch-size", "8", "--device", "cpu", "--seed", "0",
                 "--tokenizer", "pca", "--out", interrupted)
    step_two = json.loads((interrupted / "metrics.jsonl").read_text().splitlines()[0])

    suite(tmp_path)                                                     # raises if a run failed
    resumed = [json.loads(line)
               for line in (interrupted / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in resumed] == [2, 3] and resumed[0] == step_two  # continued, not rerun
    for question, members in reproduce.QUESTIONS.items():
        for name in members:
            folder = runs / question / "runs" / f"{name}-seed0"
            assert launches(folder) == 1, folder                         # dit-pca: resumed once
        assert (runs / question / "table.md").exists()
        assert (runs / question / "novel.png").stat().st_size > 10_000
    for name in SOME["ladder"]:                                      # the time course: 3 -> 6 steps
        history = map(json.loads,
                      open(runs / "long-runs" / "runs" / f"{name}-seed0" / "metrics.jsonl"))
        assert [m["step"] for m in history] == [2, 3, 4, 6]
    ladder = (runs / "ladder" / "table.md").read_text()
    causal = (runs / "causal" / "table.md").read_text()
    assert "## Drawn exactly as asked" in (runs / "objects" / "table.md").read_text()
    assert ("| `dit.py --batch-size 8 --eval-every 2 --samples-per-comp 2 --steps 3 "
            "--train-per-comp 100` |") in ladder
    assert "97.3 / 99.0 / 96.9" not in ladder                # a tiny run is not the paper's setting
    assert "## The three readings" in causal and "--head gmm" in causal
    assert "[objects](objects/table.md)" in (runs / "README.md").read_text()

    # again: nothing finished runs again; a deleted run alone is redone
    deleted = runs / "objects" / "runs" / "objects-one-local-seed0"
    shutil.rmtree(deleted)
    suite(tmp_path)
    assert launches(deleted) == 1 and launches(runs / "ladder" / "runs" / "dit-seed0") == 1
    assert launches(runs / "long-runs" / "runs" / "dit-seed0") == 1


def test_the_study_as_a_list_of_commands(tmp_path, capsys):
    """--list: every run of the suite, one command a line, each a command of its own script as a
    shell reads it (quoted: a folder's name may hold a space), run from the root; nothing runs."""
    import shlex

    import reproduce
    import runs as plumbing
    reproduce.main(["--budget", "tiny", "--device", "cpu", "--runs", str(tmp_path / "my runs"),
                    "--list"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == sum(map(len, reproduce.QUESTIONS.values())) + 4
    for line in lines:
        words = shlex.split(line)
        assert words[0] == "python" and os.path.exists(os.path.join(ROOT, words[1])), line
        args = vars(plumbing.script(os.path.basename(words[1])[:-3]).parse(words[2:])[1])
        assert args["out"].startswith(str(tmp_path / "my runs")) and args["seed"] == 0, line
    assert "python dit.py --steps 3 " in lines[4]
    recipe = [line for line in lines if "-constant-seed0" in line]      # GIVT's, and its rivals'
    assert len(recipe) == 6 and all("--steps 6 " in line for line in recipe)   # twice the budget
    assert sum("--steps 6 " in line for line in lines) == 4 + 6       # the time course: from step 0
    assert not (tmp_path / "my runs").exists()


def job_printing(folder, code):
    """A job whose command is a Python line (no torch): what execute gives it is in log.txt."""
    return str(folder), 1, [sys.executable, "-c", code]


def test_a_run_sees_the_gpu_its_scheduler_gave_not_gpu_0(tmp_path, monkeypatch):
    import reproduce
    said = "import os; print('gpu', os.environ.get('CUDA_VISIBLE_DEVICES'))"
    for visible, gpus, slot, expected in (("3", 1, 0, "3"), ("3", 1, 1, "3"),
                                          ("2,5", 2, 1, "5"), ("2,5", 2, 2, "2"),
                                          (None, 4, 6, "2")):
        if visible is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        folder = tmp_path / f"{visible}-{slot}"
        assert reproduce.execute(job_printing(folder, said), slot, 1, gpus)[0] == 0
        assert (folder / "log.txt").read_text() == f"gpu {expected}\n", (visible, slot)


def test_a_deadline_stops_a_run_as_ctrl_c_does_and_it_is_not_a_failure(tmp_path):
    import reproduce
    waits = ("import time\ntry:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n"
             "    print('interrupted')\n    raise SystemExit(1)")
    start = time.time()
    code, seconds = reproduce.execute(job_printing(tmp_path / "one", waits), 0, 1, 0,
                                      deadline=start + 1)
    assert code is None and 1 <= seconds < 30
    assert (tmp_path / "one" / "log.txt").read_text() == "interrupted\n"
    assert len((tmp_path / "one" / "wall_seconds.txt").read_text().split()) == 1
    fails = job_printing(tmp_path / "fails", "raise SystemExit(3)")
    failed = []
    assert reproduce.run_all([fails, job_printing(tmp_path / "two", waits),
                              job_printing(tmp_path / "never", waits)], 1, 0,
                             deadline=time.time() + 2, failed=failed) == failed
    assert failed == [os.path.relpath(tmp_path / "fails", ROOT)]        # the deadline: no failure
    assert (tmp_path / "two" / "log.txt").read_text() == "interrupted\n"
    assert not (tmp_path / "never").exists()                    # after the deadline: not started


def test_a_deadline_stops_a_run_even_when_the_suite_was_started_with_ctrl_c_ignored(tmp_path):
    """As under `nohup ... &`: the suite ignores SIGINT, and its runs must not inherit that."""
    import reproduce
    waits = "import time\ntry:\n    time.sleep(20)\nexcept KeyboardInterrupt:\n    print('stopped')"
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code, seconds = reproduce.execute(job_printing(tmp_path / "one", waits), 0, 1, 0,
                                          deadline=time.time() + 1)
    finally:
        signal.signal(signal.SIGINT, before)
    assert code is None and seconds < 15
    assert (tmp_path / "one" / "log.txt").read_text() == "stopped\n"


def test_bad_suite_flags(tmp_path, capsys):
    for flags, message in ((["--budget", "huge"], "invalid choice: 'huge'"),
                           (["--workers", "0"], "--workers must be a positive integer, got 0")):
        with pytest.raises(SystemExit) as exit:
            suite(tmp_path, *flags)
        said = capsys.readouterr().err
        assert exit.value.code == 2 and message in said, said[-500:]
    assert not (tmp_path / "runs").exists()


def test_ctrl_c_stops_the_suite_and_starts_no_more_runs(tmp_path):
    runs = tmp_path / "runs"
    process = subprocess.Popen([sys.executable, SCRIPT, "--budget", "tiny", "--device", "cpu",
                                "--workers", "2", "--runs", str(runs)], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True,
                               # Ctrl-C as in a terminal
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 300
    # until the first runs have started
    while not list(runs.glob("*/runs/*/log.txt")) and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(1)
    os.killpg(process.pid, signal.SIGINT)                           # Ctrl-C reaches the whole group
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stderr[-2000:]
    assert "interrupted; run the same command again to resume" in stderr, stderr[-2000:]
    started = sorted(runs.glob("**/log.txt"))
    assert 1 <= len(started) <= 4, started                            # not the 17 runs of the suite
    time.sleep(3)
    assert sorted(runs.glob("**/log.txt")) == started                     # and nothing left running
    assert not (runs / "README.md").exists()


def test_the_suite_puts_runs_per_gpu_on_each_gpu_torch_sees(tmp_path, monkeypatch):
    """tools/reproduce.py on a simulated machine of three GPUs and 64 cores: --device auto or cuda
    spreads the runs over the 3 GPUs, RUNS_PER_GPU on each at once (fewer where the cores are
    fewer); cpu and mps see no GPU and run one at a time; --workers is taken as it is."""
    import reproduce
    elsewhere.simulated_gpus(monkeypatch)
    handed = []
    monkeypatch.setattr(reproduce, "run_all", lambda todo, workers, gpus: handed.append(
        (workers, gpus)) or [])
    monkeypatch.setattr(reproduce, "report", lambda runs_dir: [])
    per_gpu = reproduce.RUNS_PER_GPU
    for cores, flags, expected in ((64, ["--device", "auto"], (3 * per_gpu, 3)),
                                   (64, ["--device", "cuda"], (3 * per_gpu, 3)),
                                   (16, ["--device", "cuda"], (16, 3)),
                                   (64, ["--device", "cuda", "--workers", "5"], (5, 3)),
                                   (64, ["--device", "cpu"], (1, 0)),
                                   (64, ["--device", "mps"], (1, 0))):
        monkeypatch.setattr(os, "cpu_count", lambda cores=cores: cores)
        reproduce.main(["--budget", "tiny", "--runs", str(tmp_path / "runs"), *flags])
        assert handed.pop() == expected, (cores, flags)


# ------------------------------------------------------------ the command list, by hand
SWEEP = ("12", "24", "34", "48", "95")        # the diversity sweep's seen counts (MAR's to 48)
RUNS = {  # question -> run name -> its own flags, beyond the budget's: written out by hand
    "ladder": {name: [] for name in ("maskgit", "jepa_maskgit", "givt", "mar", "dit")},
    "tokenizers": {f"{model}-{tokenizer}": ["--tokenizer", tokenizer]
                   for model in ("dit", "mar", "givt") for tokenizer in ("codebook", "pca")},
    "causal": {"ar": [], "ar-gmm-codebook": ["--head", "gmm", "--tokenizer", "codebook"],
               "ar-gmm": ["--head", "gmm"]},
    "conditioning": {f"dit-{mode}": ["--cond", mode]
                     for mode in ("dropout", "discrete", "discrete-dropout")},
    "unmasking": {"maskgit-random": ["--unmask", "random"]},
    "shapes3d": {**{name: ["--world", "shapes3d", "--lr-schedule", "cosine"]
                    for name in ("maskgit", "jepa_maskgit", "givt", "mar", "dit")},
                 **{f"{name}-seen{n}": ["--world", "shapes3d", "--lr-schedule", "cosine",
                                        "--seen-count", n]
                    for name, counts in (("maskgit", SWEEP), ("dit", SWEEP), ("mar", SWEEP[:4]))
                    for n in counts}},
    "clips": {name: ["--world", "clips", "--lr-schedule", "cosine"]
              for name in ("maskgit", "jepa_maskgit", "givt", "mar", "dit")},
    **{f"givt-{world}": {"givt-pca": ["--world", world, "--lr-schedule", "cosine", "--tokenizer",
                                      "pca"],
                         "dit-pca": ["--world", world, "--lr-schedule", "cosine", "--tokenizer",
                                     "pca"],
                         "givt-pca-constant": ["--world", world, "--lr-schedule", "constant",
                                               "--tokenizer", "pca"],
                         "dit-pca-constant": ["--world", world, "--lr-schedule", "constant",
                                              "--tokenizer", "pca"],
                         "maskgit-constant": ["--world", world, "--lr-schedule", "constant"]}
       for world in ("shapes3d", "clips")},
    "objects": {f"objects-{cond}-{where}": ["--cond", cond, "--locality", where]
                for cond, where in (("all", "global"), ("one", "global"), ("one", "local"),
                                    ("all", "local"))},
}
TIME_COURSE = ("maskgit", "givt", "mar", "dit")          # the ladder's rungs but JEPA, seed 0


def where(runs_dir, folder):
    """(question, run name, seed) of a run's folder runs_dir/<question>/runs/<name>-seed<k>."""
    question, kept, run = os.path.relpath(folder, runs_dir).split(os.sep)
    name, seed = run.rsplit("-seed", 1)
    assert kept == "runs", folder
    return question, name, int(seed)


def settings(argv):
    """A run's command line as {flag: value} (every flag of the suite takes one value) and the
    flags after its --out folder (the run's own, beyond the budget's)."""
    assert argv[0] == sys.executable and len(argv) % 2 == 0, argv
    out = argv.index("--out")
    return dict(zip(argv[2::2], argv[3::2])), argv[out + 2:]


def test_the_suite_lists_each_questions_runs_with_their_own_flags(tmp_path):
    """Each question's runs and the flags each carries, as written out by hand above: the
    diversity sweep lists MaskGIT and DiT at 12, 24, 34, 48 and 95 seen codes and MAR at 12 to 48,
    each with --world shapes3d --lr-schedule cosine; the clips' runs --world clips; every run's
    script is its name's first part (studies/ for the further questions' scripts); the ladder
    comes first."""
    import reproduce
    import runs
    runs_dir = str(tmp_path / "runs")
    found = {}
    for folder, steps, argv in reproduce.jobs(runs_dir, reproduce.BUDGETS["tiny"], "cpu"):
        question, name, seed = where(runs_dir, folder)
        if question == reproduce.LONG:
            continue
        assert argv[1] == os.path.join(ROOT, runs.script_file(name.split("-")[0])), argv
        found.setdefault(question, {})[name] = settings(argv)[1]
    assert list(found) == list(RUNS)
    for question, members in RUNS.items():
        assert found[question] == members, question


def test_every_run_carries_the_budget_and_a_world_run_sizes_its_own_data(tmp_path):
    """A run's command spells out its budget (steps, evaluation, batch, device, seed, folder); a
    Shapes2D run also its training set and samples per composition (objects.py, which renders
    new images each step, its samples only), a run of another world neither: its world sizes
    them."""
    import reproduce
    runs_dir, budget = str(tmp_path / "runs"), reproduce.BUDGETS["quick"]
    listed = reproduce.jobs(runs_dir, budget, "mps")
    for folder, steps, argv in listed:
        question, name, seed = where(runs_dir, folder)
        given, own = settings(argv)
        assert {k: given[k] for k in ("--steps", "--seed", "--eval-every", "--batch-size",
                                      "--device", "--out")} == {
            "--steps": str(steps), "--seed": str(seed), "--eval-every": "50",
            "--batch-size": "64", "--device": "mps", "--out": folder}, argv
        world = "--world" in own
        assert ("--samples-per-comp" in given) == (not world), argv
        assert ("--train-per-comp" in given) == (not world and question != "objects"), argv
        if "--samples-per-comp" in given:
            assert given["--samples-per-comp"] == "16", argv
        if "--train-per-comp" in given:
            assert given["--train-per-comp"] == "5000", argv
    worlds_ = [q for q in RUNS if any("--world" in flags for flags in RUNS[q].values())]
    assert sum("--world" in argv for _, _, argv in listed) == 3 * sum(len(RUNS[q])
                                                                       for q in worlds_)


def test_each_run_is_listed_once_a_seed_and_the_time_course_last_from_step_0(tmp_path):
    """The default budget: every run at seeds 0, 1 and 2 and its number of steps, question by
    question and within one seed by seed, each in its own folder; then the time course, seed 0
    of the ladder's four rungs (no JEPA) to the long budget, in runs/long-runs/. The tiny budget:
    seed 0 alone."""
    import reproduce
    runs_dir, budget = str(tmp_path / "runs"), reproduce.BUDGETS["default"]
    listed = reproduce.jobs(runs_dir, budget, "cpu")
    expected = [(question, name, seed) for question, members in RUNS.items()
                for seed in (0, 1, 2) for name in members]
    places = [where(runs_dir, folder) for folder, _, _ in listed]
    assert places[:-4] == expected
    assert places[-4:] == [(reproduce.LONG, name, 0) for name in TIME_COURSE]
    for (folder, steps, argv), (question, name, seed) in zip(listed, places):
        given, own = settings(argv)
        long = question == reproduce.LONG
        recipe = question.startswith("givt-") and name.endswith("-constant")  # twice the budget
        assert steps == (8000 if long else 4000 if recipe else 2000), folder
        assert given["--steps"] == str(steps), folder
        assert given["--seed"] == str(seed) and given["--out"] == folder
        if long:
            assert own == [] and argv[1] == os.path.join(ROOT, f"{name}.py")
    tiny = reproduce.jobs(runs_dir, reproduce.BUDGETS["tiny"], "cpu")
    assert {where(runs_dir, folder)[2] for folder, _, _ in tiny} == {0}
    assert len(tiny) == sum(map(len, RUNS.values())) + 4


# --------------------------------------------------------- skipping, resuming, scheduling
def write_metrics(folder, steps):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps({"step": s}) + "\n" for s in steps))


def test_a_run_is_finished_when_its_last_evaluation_is_its_last_step(tmp_path):
    """finished: an evaluation at the step the budget asks for, the last one kept; a run with no
    evaluation, or stopped at an earlier one, is not."""
    import reproduce
    assert not reproduce.finished(str(tmp_path / "none"), 3)
    write_metrics(tmp_path / "half", [2])
    write_metrics(tmp_path / "done", [2, 3])
    assert not reproduce.finished(str(tmp_path / "half"), 3)
    assert reproduce.finished(str(tmp_path / "done"), 3)
    assert not reproduce.finished(str(tmp_path / "done"), 6)


def test_a_finished_run_is_skipped_a_checkpointed_one_resumed_and_the_rest_started_anew(
        tmp_path):
    """execute: a finished run starts nothing; a run with a checkpoint is resumed (its command
    gains --resume, its folder is kept); a run without one starts again in an emptied folder."""
    import reproduce
    said = "import sys; print(sys.argv[1:])"
    done, resumed, anew = tmp_path / "done", tmp_path / "resumed", tmp_path / "anew"
    write_metrics(done, [1])
    assert reproduce.execute(job_printing(done, said), 0, 1, 0) == (0, 0.0)
    assert not (done / "log.txt").exists() and not (done / "wall_seconds.txt").exists()
    write_metrics(resumed, [])
    (resumed / "ckpt.pt").write_text("a checkpoint")
    write_metrics(anew, [])
    (anew / "stale.txt").write_text("left by a run that kept no checkpoint")
    for folder in (resumed, anew):
        assert reproduce.execute(job_printing(folder, said), 0, 1, 0)[0] == 0
    assert (resumed / "log.txt").read_text() == "['--resume']\n"
    assert (resumed / "ckpt.pt").exists() and (resumed / "metrics.jsonl").exists()
    assert (anew / "log.txt").read_text() == "[]\n"
    assert sorted(os.listdir(anew)) == ["log.txt", "wall_seconds.txt"]


def test_the_runs_go_at_once_a_slot_a_gpu_sharing_the_cores(tmp_path, monkeypatch):
    """run_all on two slots and two GPUs, six cores: the two runs go at the same time (each waits
    for the other to have started), one on each GPU, three threads each."""
    import reproduce
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    marks = tmp_path / "marks"
    marks.mkdir()
    waits = ("import os, sys, time\nopen(os.path.join(sys.argv[1], sys.argv[2]), 'w').close()\n"
             "deadline = time.time() + 10\n"
             "while len(os.listdir(sys.argv[1])) < 2 and time.time() < deadline:\n"
             "    time.sleep(0.02)\n"
             "print(os.environ.get('CUDA_VISIBLE_DEVICES'), os.environ['OMP_NUM_THREADS'],\n"
             "      len(os.listdir(sys.argv[1])) == 2)")
    todo = [(str(tmp_path / name), 1, [sys.executable, "-c", waits, str(marks), name])
            for name in ("a", "b")]
    assert reproduce.run_all(todo, 2, 2) == []
    said = sorted((tmp_path / name / "log.txt").read_text() for name in ("a", "b"))
    assert said == ["0 3 True\n", "1 3 True\n"]


def test_a_run_hears_ctrl_c_even_where_the_suite_ignores_it():
    """hears_ctrl_c, what a run's process calls before its script: Ctrl-C's default action back."""
    import reproduce
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        reproduce.hears_ctrl_c()
        assert signal.getsignal(signal.SIGINT) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, before)


def test_the_report_builds_a_table_for_each_question_with_an_evaluated_run(tmp_path,
                                                                         monkeypatch):
    """report: collect.py's table for each question (the time course last) that has a run with
    kept samples, counting those runs alone; a line for each question that has none; an index."""
    import reproduce
    runs_dir = tmp_path / "runs"
    for run in ("ladder/runs/dit-seed0", "ladder/runs/mar-seed0", "long-runs/runs/dit-seed0"):
        (runs_dir / run).mkdir(parents=True)
        (runs_dir / run / "samples.npz").write_bytes(b"")
    (runs_dir / "ladder" / "runs" / "givt-seed0").mkdir()             # not evaluated yet
    (runs_dir / "causal" / "runs" / "ar-seed0").mkdir(parents=True)   # nor this one
    tables = []
    monkeypatch.setattr(reproduce.collect, "write", lambda folder, clock, command: tables.append(
        (folder, clock, command)))
    index = reproduce.report(str(runs_dir))
    none = "no run has finished an evaluation yet"
    assert index == ["# The study, rebuilt", "", "- [ladder](ladder/table.md): 2 runs",
                     *[f"- {q}: {none}" for q in ("tokenizers", "causal", "conditioning",
                                                  "unmasking", "shapes3d", "clips",
                                                  "givt-shapes3d", "givt-clips", "objects")],
                     "- [long-runs](long-runs/table.md): 1 runs"]
    assert (runs_dir / "README.md").read_text() == "\n".join(index) + "\n"
    assert tables == [(str(runs_dir / q), None,
                       f"python tools/collect.py {os.path.relpath(runs_dir / q, ROOT)}")
                      for q in ("ladder", "long-runs")]
