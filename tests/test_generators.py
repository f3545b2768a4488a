"""What every generator script owes the contract, tried through its command line.

A run that is killed or interrupted goes through the command line, a new Python; every other run
calls the script's main(argv) in this process, as its command line does, sparing a start-up
(a new Python and its torch import) where the exit of the process is not under test."""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch

import runs
import scripts
from scripts import FAST, ONCE, ROOT

SCRIPTS = ["dit.py", "maskgit.py", "givt.py", "mar.py", "jepa_maskgit.py", "ar.py"]
MASKED = ["maskgit.py", "jepa_maskgit.py", "givt.py", "mar.py"]    # the models with --mask-schedule
IMPORTED = {name: scripts.module_of(name) for name in SCRIPTS}
EIGHT = ["--steps", "8", "--eval-every", "4", *FAST[4:]]                  # evaluations 4, 6, 8
_FINISHED, _KILLED = {}, {}


def launch(script, *args, **streams):
    return subprocess.Popen([sys.executable, os.path.join(ROOT, scripts.where(script)),
                             *map(str, args)], cwd=ROOT, **streams)


def finished(script, tmp_path_factory):
    """One real 8-step run per script, shared by the tests below: (run folder, what it printed),
    trained in this process by the script's main(argv), as its command line calls it. Beside it, at
    the same time (the second core), the same command in a new Python, SIGKILLed once it has
    checkpointed: killed(script)."""
    if script not in _FINISHED:
        folder = tmp_path_factory.mktemp(script[:-3])
        out, broken = folder / "run", folder / "broken"
        process = launch(script, *EIGHT, "--out", broken, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        ended, stop = [], threading.Event()

        def kill_once_checkpointed():
            deadline = time.time() + 240
            while (not (broken / "ckpt.pt").exists() and process.poll() is None
                   and time.time() < deadline and not stop.is_set()):
                time.sleep(0.05)
            ended.append(process.poll() is not None)
            process.kill()
            process.wait()
        watcher = threading.Thread(target=kill_once_checkpointed)
        watcher.start()
        try:
            printed = scripts.main(script, *EIGHT, "--out", out)
        except BaseException:
            stop.set()                                   # this run failed: no waiting on the other
            raise
        finally:
            watcher.join()
        _FINISHED[script], _KILLED[script] = (out, printed), (broken, ended[0])
    return _FINISHED[script]


def killed(script, tmp_path_factory):
    """The run beside finished(script)'s: (its folder, whether it ended before the kill)."""
    finished(script, tmp_path_factory)
    return _KILLED[script]


def without_time(path):
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in open(path)]


def refused(script, argv, capsys):
    return scripts.refused(IMPORTED[script], argv, capsys)


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_run_writes_every_file_of_the_contract(script, tmp_path_factory):
    out, stdout = finished(script, tmp_path_factory)
    assert re.search(r"^seen [\d.]+ \| level-1 [\d.]+ \| level-2 [\d.]+$", stdout, re.M)
    for code in ("000", "111"):
        assert re.search(rf"^\s+{code}\s+\w+", stdout, re.M)
    for name in ("config.json", "metrics.jsonl", "samples.npz", "samples.png", "curves.png",
                 "ckpt.pt", "samples/step_4.npz", "samples/step_8.npz"):
        assert (out / name).exists(), name
    config = json.load(open(out / "config.json"))
    assert config["device"] == "cpu" and config["steps"] == 8
    lines = [json.loads(line) for line in open(out / "metrics.jsonl")]
    assert [m["step"] for m in lines] == [4, 6, 8]                        # log-spaced, then the end
    for reading in ("acc", "fidelity", "probe_acc"):
        assert set(lines[-1][reading]) == {f"{i:03b}" for i in range(8)}
        assert all(0 <= v <= 1 for v in lines[-1][reading].values())
    samples = np.load(out / "samples.npz")
    assert samples["images"].shape == (16, 32, 32, 3) and samples["images"].dtype == np.uint8
    assert samples["factors"].shape == (16, 3) and samples["factors"].dtype == np.int64
    state = torch.load(out / "ckpt.pt", weights_only=True)               # safe loading
    for key in ("model", "ema", "optimizer", "step", "config", "rng"):
        assert key in state
    assert state["step"] == 8


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_killed_run_resumes_to_the_same_metrics(script, tmp_path_factory):
    """SIGKILL a real run once it has checkpointed, resume it, and compare with the unbroken
    run of the same seed: every evaluation the same, wall time aside."""
    whole, _ = finished(script, tmp_path_factory)
    broken, ended = killed(script, tmp_path_factory)            # SIGKILLed once it had checkpointed
    assert not ended, "the run ended before it could be killed"
    steps_before = [json.loads(line)["step"] for line in open(broken / "metrics.jsonl")]
    assert steps_before and steps_before[-1] < 8                            # killed part-way
    scripts.main(script, *EIGHT, "--out", broken, "--resume")
    a, b = without_time(whole / "metrics.jsonl"), without_time(broken / "metrics.jsonl")
    assert [m["step"] for m in a] == [m["step"] for m in b]
    for x, y in zip(a, b):
        assert x["loss"] == pytest.approx(y["loss"], rel=1e-5) and x["acc"] == y["acc"]


def test_resume_with_more_steps_extends_a_finished_run(tmp_path, tmp_path_factory):
    """A 4-step run resumed with --steps 6 stands where the 8-step run stood at step 6
    (training does not depend on where the evaluations fall)."""
    whole, _ = finished("dit.py", tmp_path_factory)
    split = tmp_path / "split"
    scripts.main("dit.py", "--steps", "4", *EIGHT[2:], "--out", split)                   # stop at 4
    scripts.main("dit.py", "--steps", "6", *EIGHT[2:], "--out", split, "--resume")
    a = {m["step"]: m for m in without_time(whole / "metrics.jsonl")}
    b = without_time(split / "metrics.jsonl")
    assert [m["step"] for m in b] == [4, 6]
    assert b[-1]["loss"] == pytest.approx(a[6]["loss"], rel=1e-5) and b[-1]["acc"] == a[6]["acc"]


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("flags, message", [
    (["--cond", "fuzzy"], "invalid choice: 'fuzzy'"),
    (["--device", "tpu"], "invalid choice: 'tpu'"),
    (["--steps", "-3"], "--steps must be a positive integer, got -3"),
    (["--steps", "10", "--eval-every", "50"], "--eval-every 50 is larger than --steps 10"),
    (["--cond-drop", "1.5"], "--cond-drop must be in [0, 1), got 1.5"),
    (["--data", "endless"], "invalid choice: 'endless'"),
    (["--weight-decay", "-0.1"], "--weight-decay must be a number >= 0, got -0.1"),
])
def test_bad_flags_are_refused_with_a_message(script, flags, message, tmp_path, capsys):
    code, said = refused(script, [*flags, "--out", str(tmp_path / "x")], capsys)
    assert code == 2 and message in said, said[-500:]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_run_folder_that_cannot_be_made_is_refused_with_a_message(script, tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    for out in ("/proc/x", str(tmp_path / "a-file" / "run")):           # not writable; under a file
        code, said = refused(script, ["--out", out], capsys)
        assert code == 2 and f"--out {out}: cannot make this folder" in said, said[-500:]


@pytest.mark.parametrize("script, flags, message", [
    ("givt.py", ["--mixture-temperature", "-1"],
     "--mixture-temperature must be a number >= 0, got -1.0"),
    ("givt.py", ["--mask-schedule", "square"], "invalid choice: 'square'"),
    ("maskgit.py", ["--mask-schedule", "square"], "invalid choice: 'square'"),
    ("mar.py", ["--mask-schedule", "square"], "invalid choice: 'square'"),
])
def test_the_masked_models_refuse_a_bad_schedule_or_mixture_temperature(script, flags, message,
                                                                        capsys, tmp_path):
    code, said = refused(script, [*flags, "--out", str(tmp_path / "x")], capsys)
    assert code == 2 and message in said, said[-500:]
    assert not (tmp_path / "x").exists()


LINEAR = ["--mask-schedule", "linear"]
RECIPE = ["--data", "fresh", "--lr-schedule", "cosine", "--weight-decay", "0.01"]
# each model's own
OWN = {"dit.py": ["--time-dist", "uniform"], "mar.py": ["--time-dist", "uniform", *LINEAR],
       "maskgit.py": [*LINEAR, "--choice-temperature", "3"],
       "givt.py": [*LINEAR, "--mixture-temperature", "0.5"],
       "jepa_maskgit.py": [*LINEAR, "--jepa-weight", "0.3"],
       "ar.py": ["--head", "gmm", "--tokenizer", "codebook"]}  # finished() has the categorical head
_RECIPE = {}


def recipe(script, tmp_path_factory):
    """One 4-step run per script in this process, evaluated once, with the recipe flags and the
    model's own knobs away from their defaults, shared by the two tests below: (run folder, the
    values the schedule (or tau) argument of each spied function took in it)."""
    if script not in _RECIPE:
        out, received = tmp_path_factory.mktemp(f"recipe-{script[:-3]}") / "run", {}
        with pytest.MonkeyPatch.context() as monkeypatch:
            def spy(owner, name, position, keyword):
                real = getattr(owner, name)

                def recorded(*args, **kwargs):
                    value = args[position] if len(args) > position else kwargs.get(keyword)
                    received.setdefault(name, set()).add(value)
                    return real(*args, **kwargs)
                monkeypatch.setattr(owner, name, recorded)
            if script in MASKED:
                module = IMPORTED[script]
                spy(module, "random_mask", 3, "schedule")   # training: jepa_maskgit.py's own import
                spy(IMPORTED["maskgit.py" if script == "jepa_maskgit.py" else script],
                    "remask_count", 4,
                    "schedule")                                         # decoding
                if script == "givt.py":
                    spy(module, "choose_component", 1, "tau")
            scripts.main(script, *ONCE, *RECIPE, *OWN[script], "--out", out)
        _RECIPE[script] = out, received
    return _RECIPE[script]


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_recipe_flags_reach_the_training_loop(script, tmp_path_factory):
    """Fresh images, a cosine schedule and weight decay: the optimiser ends where the schedule
    says."""
    out, _ = recipe(script, tmp_path_factory)
    config = json.load(open(out / "config.json"))
    recipe_flags = (config["data"], config["lr_schedule"], config["weight_decay"])
    assert recipe_flags == ("fresh", "cosine", 0.01)
    if script in ("dit.py", "mar.py"):
        assert config["time_dist"] == "uniform"                      # not the default, logit-normal
    if script in MASKED:
        assert config["mask_schedule"] == "linear"                   # not the default, cosine
    if script == "ar.py":
        assert (config["head"], config["tokenizer"]) == ("gmm", "codebook")
    group = torch.load(out / "ckpt.pt", weights_only=True)["optimizer"]["param_groups"][0]
    assert group["weight_decay"] == 0.01
    assert group["lr"] == pytest.approx(runs.learning_rate(config, 3))
    assert group["lr"] < config["lr"] / 200


@pytest.mark.parametrize("script", SCRIPTS)
def test_an_existing_run_is_not_overwritten(script, tmp_path, tmp_path_factory, capsys):
    out, _ = finished(script, tmp_path_factory)
    code, said = refused(script, [*EIGHT, "--out", str(out)], capsys)
    assert code == 2 and "already holds a run; pass --resume" in said
    code, said = refused(script, [*FAST, "--out", str(tmp_path / "none"), "--resume"], capsys)
    assert code == 2 and "no checkpoint" in said


def test_a_checkpoint_of_another_model_is_refused(tmp_path_factory, capsys):
    out, _ = finished("dit.py", tmp_path_factory)
    config = (out / "config.json").read_text()
    code, said = refused("maskgit.py", [*EIGHT, "--out", str(out), "--resume"], capsys)
    assert code == 1 and "written by 'dit', not 'maskgit'" in said
    code, said = refused("dit.py", [*EIGHT, "--out", str(out), "--resume", "--seed", "5"], capsys)
    assert code == 1 and "seed=0, this run asks 5" in said
    assert (out / "config.json").read_text() == config          # a refusal leaves the run as it was


def hear_ctrl_c():
    """In the child: take SIGINT as a terminal would (a shell's background job, such as
    `pytest &`, ignores it, and the child would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


KILL_MID_WRITE = """
import os, signal, sys, torch
import data
real_save, calls = torch.save, []
def save_then_die(state, path):                  # the second checkpoint: half written, then SIGKILL
    if str(path).endswith("ckpt.pt.tmp"):
        calls.append(path)
    if len(calls) == 2 and str(path).endswith("ckpt.pt.tmp"):
        with open(path, "wb") as f:
            f.write(b"half a checkpoint")
            f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    real_save(state, path)
torch.save = save_then_die
sys.argv = ["dit.py"] + sys.argv[1:]
import dit
dit.main(sys.argv[1:])
"""


@pytest.fixture(scope="module")
def dit_broken_twice(tmp_path_factory):
    """Two dit.py runs through the command line, started together (one per core): "ctrl-c", for the
    test below to interrupt once it has checkpointed, and "mid-write" (KILL_MID_WRITE), which dies
    in the middle of writing its second checkpoint: name -> (process, run folder, its stderr
    file)."""
    folder, started = tmp_path_factory.mktemp("dit-broken"), {}
    for name, argv, preexec in (("ctrl-c",
                                 [os.path.join(ROOT, "dit.py"), *FAST[:1], "100000", *FAST[2:]],
                                 hear_ctrl_c),
                                ("mid-write", ["-c", KILL_MID_WRITE, *EIGHT], None)):
        out, stderr = folder / name, open(folder / f"{name}.stderr", "w+")
        process = subprocess.Popen([sys.executable, *argv, "--out", str(out)], cwd=ROOT,
                                   stdout=subprocess.DEVNULL, stderr=stderr, text=True,
                                   preexec_fn=preexec)
        started[name] = process, out, stderr
    yield started
    for process, _, stderr in started.values():
        process.kill()
        process.wait()
        stderr.close()


def written(file):
    file.seek(0)
    return file.read()


def test_ctrl_c_says_how_to_resume(dit_broken_twice):
    process, out, stderr = dit_broken_twice["ctrl-c"]
    deadline = time.time() + 240
    while not (out / "ckpt.pt").exists() and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    process.wait(timeout=60)
    said = written(stderr)
    assert process.returncode == 1 and f"continue with --resume --out {out}" in said, said[-500:]


def test_cuda_asked_for_where_there_is_none(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has cuda")
    code, said = refused("dit.py", [*FAST, "--device", "cuda", "--out", str(tmp_path / "x")],
                         capsys)
    assert code == 1 and "--device cuda is not available here" in said


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_diverging_run_stops_at_once_with_a_hint(script, tmp_path):
    """In-process (the script's main, as its command line calls it), to spare a start-up."""
    with pytest.raises(SystemExit) as exit:
        scripts.main(script, *FAST[:1], "40", *FAST[2:], "--lr", "1e38", "--out", tmp_path / "x")
    said = str(exit.value.code)
    assert re.search(r"error: loss is (nan|inf|-inf) at step \d+; .*try a lower --lr", said), (
        said[-500:])


def test_a_kill_during_a_checkpoint_write_loses_nothing(tmp_path_factory, dit_broken_twice):
    """The process dies in the middle of writing its second checkpoint: the first stays whole,
    and resuming from it ends where an unbroken run stood at the same step."""
    whole, _ = finished("dit.py", tmp_path_factory)
    process, broken, stderr = dit_broken_twice["mid-write"]
    process.wait(timeout=300)
    assert process.returncode == -signal.SIGKILL, written(stderr)[-1000:]
    assert (broken / "ckpt.pt.tmp").read_bytes() == b"half a checkpoint"
    assert torch.load(broken / "ckpt.pt", weights_only=True)["step"] == 4         # the first, whole
    scripts.main("dit.py", *EIGHT, "--out", broken, "--resume")
    assert not (broken / "ckpt.pt.tmp").exists()
    a = {m["step"]: m for m in without_time(whole / "metrics.jsonl")}
    b = without_time(broken / "metrics.jsonl")
    assert [m["step"] for m in b] == [4, 6, 8]
    assert [m["acc"] for m in b] == [a[step]["acc"] for step in (4, 6, 8)]


@pytest.mark.parametrize("script", MASKED)
def test_the_mask_schedule_and_mixture_temperature_reach_training_and_sampling(script,
                                                                              tmp_path_factory):
    """Not only config.json: the hidden tokens drawn in training and the decoding counts get the
    schedule."""
    _, received = recipe(script, tmp_path_factory)          # --mask-schedule linear, givt's tau 0.5
    assert received["random_mask"] == {"linear"} and received["remask_count"] == {"linear"}
    assert received.get("choose_component") == ({0.5} if script == "givt.py" else None)
