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


def test_collect_names_a_setting_by_its_flags_away_from_the_defaults():
    import collect
    config = json.load(open(os.path.join(ROOT, "results", "ladder", "runs", "maskgit",
                                         "config.json")))
    assert collect.setting(config) == "maskgit.py"
    assert (collect.setting({**config, "lr": 3e-4, "label_smoothing": 0.1})
            == "maskgit.py --label-smoothing 0.1 --lr 0.0003")
    new = {"model": "dit", "cond": "continuous", "time_dist": "logit-normal"}
    assert collect.setting(new) == "dit.py"
    assert collect.setting({**new, "time_dist": "uniform"}) == "dit.py --time-dist uniform"
    # a model's own knobs and a longer run are settings of their own, not more seeds of the default
    # a flag whose default follows another's is named where the command needs it: ar.py's tokenizer
    ar = {"model": "ar", "head": "gmm", "tokenizer": "pixels"}
    assert collect.setting(ar) == "ar.py --head gmm"
    assert (collect.setting({**ar, "tokenizer": "codebook"})
            == "ar.py --head gmm --tokenizer codebook")
    assert collect.setting({**ar, "head": "categorical", "tokenizer": "codebook"}) == "ar.py"
    givt = json.load(open(os.path.join(ROOT, "results", "ladder", "runs", "givt", "config.json")))
    assert collect.setting(givt) == "givt.py"
    assert collect.setting({**givt, "components": 16, "temperature": 0.0, "steps": 5000}) == \
        "givt.py --components 16 --steps 5000 --temperature 0.0"
    assert collect.setting({**givt, "mask_schedule": "linear"}) == "givt.py --mask-schedule linear"


def test_collect_reads_a_runs_commit_from_its_provenance():
    import collect
    clean = {"commit": "0fc5ff413793fdb4eb18be1b64c0fd2222720d84", "uncommitted_changes": False}
    assert collect.commit({"provenance": clean}) == "0fc5ff4"
    assert (collect.commit({"provenance": {**clean, "uncommitted_changes": True}})
            == "0fc5ff4 (uncommitted changes)")
    assert collect.commit({}) == collect.NOT_RECORDED          # a config.json made by other code


@pytest.mark.parametrize("script, change",
                         [("givt.py", "mixture_temperature=0"),
                          ("jepa_maskgit.py", "sample_steps=3"), ("mar.py", "diffusion_steps=3"),
                          ("ar.py", "temperature=0")])
def test_resample_redraws_a_run_and_changes_only_what_it_is_told(tmp_path, tiny_run, capsys, script,
                                                                  change):
    import numpy as np
    import resample
    out = tiny_run(script)                                 # 4 steps, evaluated at 4; only read here
    same, changed = tmp_path / "same", tmp_path / "changed"
    resample.main([str(out), "--out", str(same)])
    original, redrawn = np.load(out / "samples.npz"), np.load(same / "samples.npz")
    assert (original["images"] == redrawn["images"]).all()  # nothing changed: the run's own samples
    resample.main([str(out), "--out", str(changed), "--set", change])
    assert (np.load(changed / "samples.npz")["images"] != original["images"]).any()
    key, value = change.split("=")
    config = json.loads((changed / "config.json").read_text())
    assert float(config[key]) == float(value) and config["resampled_from"] == str(out)
    trained = json.loads((out / "config.json").read_text())["provenance"]
    assert config["provenance"] == trained and config["resample_provenance"]["commit"]
    [line] = [json.loads(x) for x in (changed / "metrics.jsonl").read_text().splitlines()]
    last = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert line["step"] == 4 and line["loss"] == last["loss"]
    capsys.readouterr()
    bad, empty = (("temperature=-1", "must be a number >= 0"),
                  ("temperature", "invalid float value: ''")) \
        if script == "ar.py" else (("sample_steps=0", "a positive integer"),
                                   ("sample_steps", "invalid int value: ''"))
    for argv, said in (([str(out), "--out", str(tmp_path / "x"), "--set", "width=8"],
                        "'width' is not one of them"),
                       ([str(out), "--out", str(tmp_path / "x"), "--set", bad[0]], bad[1]),
                       ([str(out), "--out", str(tmp_path / "x"), "--set", empty[0]], empty[1]),
                       ([str(out), "--out", str(changed)], "already holds metrics.jsonl")):
        with pytest.raises(SystemExit) as exit:
            resample.main(argv)
        assert said in str(exit.value.code)
    assert not (tmp_path / "x").exists()
    if script in ("givt.py", "jepa_maskgit.py"):         # the masked models' order, checked by name
        with pytest.raises(SystemExit, match="invalid choice: 'confidance'"):
            resample.main([str(out), "--out", str(tmp_path / "x"), "--set", "unmask=confidance"])
