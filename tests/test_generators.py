"""What every generator script owes the contract, tried through its command line."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = ["dit.py", "maskgit.py", "givt.py", "mar.py", "jepa_maskgit.py"]
FAST = ["--steps", "4", "--eval-every", "2", "--samples-per-comp", "2", "--batch-size", "8",
        "--device", "cpu", "--train-per-comp", "100"]


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(ROOT, script), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("script", SCRIPTS)
def test_few_step_run_writes_every_file_of_the_contract(script, tmp_path):
    out = tmp_path / "run"
    result = run(script, *FAST, "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    assert re.search(r"^seen [\d.]+ \| level-1 [\d.]+ \| level-2 [\d.]+$", result.stdout, re.M)
    for code in ("000", "111"):
        assert re.search(rf"^\s+{code}\s+\w+", result.stdout, re.M)
    for name in ("config.json", "metrics.jsonl", "samples.npz", "samples.png", "curves.png", "ckpt.pt"):
        assert (out / name).exists(), name
    config = json.load(open(out / "config.json"))
    assert config["device"] == "cpu" and config["steps"] == 4
    lines = [json.loads(l) for l in open(out / "metrics.jsonl")]
    assert [l["step"] for l in lines] == [2, 3, 4]                        # log-spaced, then the end
    assert set(lines[-1]["acc"]) == {f"{i:03b}" for i in range(8)}
    assert all(0 <= v <= 1 for v in lines[-1]["acc"].values())
    samples = np.load(out / "samples.npz")
    assert samples["images"].shape == (16, 32, 32, 3) and samples["images"].dtype == np.uint8
    assert samples["factors"].shape == (16, 3) and samples["factors"].dtype == np.int64
    state = torch.load(out / "ckpt.pt", weights_only=True)               # safe loading
    for key in ("model", "ema", "optimizer", "step", "config", "rng"):
        assert key in state
    assert state["step"] == 4


@pytest.mark.parametrize("script", SCRIPTS)
def test_resume_continues_and_matches_an_uninterrupted_run(script, tmp_path):
    whole, split = tmp_path / "whole", tmp_path / "split"
    args = FAST[:]
    args[1] = "6"
    assert run(script, *args, "--out", str(whole)).returncode == 0
    assert run(script, *args, "--out", str(tmp_path / "again")).returncode == 0
    without_time = lambda path: [{k: v for k, v in json.loads(l).items() if k != "seconds"} for l in open(path)]
    same = without_time(whole / "metrics.jsonl") == without_time(tmp_path / "again" / "metrics.jsonl")
    assert same, "the same seed and settings must give identical metrics on CPU (wall time aside)"
    assert run(script, *FAST, "--out", str(split)).returncode == 0            # stop at 4
    resumed = run(script, *args, "--out", str(split), "--resume")            # go on to 6
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    a = [json.loads(l) for l in open(whole / "metrics.jsonl")]
    b = [json.loads(l) for l in open(split / "metrics.jsonl")]
    assert [m["step"] for m in b] == [2, 3, 4, 6]
    assert a[-1]["loss"] == pytest.approx(b[-1]["loss"], rel=1e-5)           # same data, same state
    assert a[-1]["acc"] == b[-1]["acc"]


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("flags, message", [
    (["--cond", "fuzzy"], "invalid choice: 'fuzzy'"),
    (["--device", "tpu"], "invalid choice: 'tpu'"),
    (["--steps", "-3"], "--steps must be a positive integer, got -3"),
    (["--steps", "10", "--eval-every", "50"], "--eval-every 50 is larger than --steps 10"),
    (["--cond-drop", "1.5"], "--cond-drop must be in [0, 1), got 1.5"),
])
def test_bad_flags_are_refused_with_a_message(script, flags, message, tmp_path):
    result = run(script, *flags, "--out", str(tmp_path / "x"))
    assert result.returncode == 2 and message in result.stderr, result.stderr[-500:]


@pytest.mark.parametrize("script", SCRIPTS)
def test_an_existing_run_is_not_overwritten(script, tmp_path):
    out = tmp_path / "run"
    assert run(script, *FAST, "--out", str(out)).returncode == 0
    again = run(script, *FAST, "--out", str(out))
    assert again.returncode == 2 and "already holds a run; pass --resume" in again.stderr
    missing = run(script, *FAST, "--out", str(tmp_path / "none"), "--resume")
    assert missing.returncode == 2 and "no checkpoint" in missing.stderr


def test_a_checkpoint_of_another_model_is_refused(tmp_path):
    out = tmp_path / "run"
    assert run("dit.py", *FAST, "--out", str(out)).returncode == 0
    config = (out / "config.json").read_text()
    result = run("maskgit.py", *FAST, "--out", str(out), "--resume")
    assert result.returncode == 1 and "written by 'dit', not 'maskgit'" in result.stderr
    result = run("dit.py", *FAST, "--out", str(out), "--resume", "--seed", "5")
    assert result.returncode == 1 and "seed=0, this run asks 5" in result.stderr
    assert (out / "config.json").read_text() == config                   # a refusal leaves the run as it was


def hear_ctrl_c():
    """In the child: take SIGINT as a terminal would (a shell's background job, such as
    `pytest &`, ignores it, and the child would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_says_how_to_resume(tmp_path):
    out = tmp_path / "run"
    args = FAST[:1] + ["100000"] + FAST[2:]
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, "dit.py"), *args, "--out", str(out)],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=hear_ctrl_c)
    deadline = time.time() + 240
    while not (out / "ckpt.pt").exists() and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1 and f"continue with --resume --out {out}" in stderr, stderr[-500:]


def test_cuda_asked_for_where_there_is_none(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has cuda")
    result = run("dit.py", *FAST, "--device", "cuda", "--out", str(tmp_path / "x"))
    assert result.returncode == 1 and "--device cuda is not available here" in result.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_killed_run_resumes_to_the_same_metrics(script, tmp_path):
    """SIGKILL a real run once it has checkpointed, resume it, compare with an unbroken run."""
    args = FAST[:]
    args[1] = "12"                                                          # evaluations 2, 3, 4, 6, 8, 11, 12
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert run(script, *args, "--out", str(whole)).returncode == 0
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, script), *args, "--out", str(broken)],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while not (broken / "ckpt.pt").exists() and process.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be killed"
    process.kill()
    process.wait()
    steps_before = [json.loads(l)["step"] for l in open(broken / "metrics.jsonl")]
    assert steps_before and steps_before[-1] < 12                           # killed part-way
    resumed = run(script, *args, "--out", str(broken), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    a = [json.loads(l) for l in open(whole / "metrics.jsonl")]
    b = [json.loads(l) for l in open(broken / "metrics.jsonl")]
    assert [m["step"] for m in a] == [m["step"] for m in b]
    for x, y in zip(a, b):
        assert x["loss"] == pytest.approx(y["loss"], rel=1e-5) and x["acc"] == y["acc"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_diverging_run_stops_at_once_with_a_hint(script, tmp_path):
    result = run(script, *FAST[:1], "40", *FAST[2:], "--lr", "1e38", "--out", str(tmp_path / "x"))
    assert result.returncode == 1
    assert re.search(r"error: loss is (nan|inf|-inf) at step \d+; .*try a lower --lr", result.stderr), result.stderr[-500:]


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


def test_a_kill_during_a_checkpoint_write_loses_nothing(tmp_path):
    """The process dies in the middle of writing its second checkpoint: the first stays whole,
    and resuming from it ends where an unbroken run ends."""
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert run("dit.py", *FAST, "--out", str(whole)).returncode == 0
    killed = subprocess.run([sys.executable, "-c", KILL_MID_WRITE, *FAST, "--out", str(broken)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-1000:]
    assert (broken / "ckpt.pt.tmp").read_bytes() == b"half a checkpoint"
    assert torch.load(broken / "ckpt.pt", weights_only=True)["step"] == 2           # the first, whole
    resumed = run("dit.py", *FAST, "--out", str(broken), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-1000:]
    assert not (broken / "ckpt.pt.tmp").exists()
    a = [json.loads(l) for l in open(whole / "metrics.jsonl")]
    b = [json.loads(l) for l in open(broken / "metrics.jsonl")]
    assert [m["step"] for m in b] == [2, 3, 4] and [m["acc"] for m in a] == [m["acc"] for m in b]
