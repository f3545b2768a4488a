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
        args = vars(plumbing.script(words[1][:-3]).parse(words[2:])[1])   # its own parser's
        assert args["out"].startswith(str(tmp_path / "my runs")) and args["seed"] == 0, line
    assert "python dit.py --steps 3 " in lines[4]
    assert sum("--steps 6 " in line for line in lines) == 4           # the time course: from step 0
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
