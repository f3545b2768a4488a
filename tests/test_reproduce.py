"""tools/reproduce.py at its tiny budget: every run, figure and table; skip what is done, resume what is not.

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
    reproduce.main(["--budget", "tiny", "--device", "cpu", "--workers", "2", "--runs", str(tmp_path / "runs"),
                    "--results", str(tmp_path / "results"), *map(str, flags)])


def launches(folder):
    path = folder / "wall_seconds.txt"
    return len(path.read_text().split()) if path.exists() else 0


def test_the_tiny_suite_runs_everything_then_skips_and_resumes(tmp_path):
    runs = tmp_path / "runs"
    # an interrupted run: its checkpoint stops at step 2 of the 3 the budget asks for
    scripts.main("dit.py", "--steps", "2", "--eval-every", "2", "--samples-per-comp", "2", "--train-per-comp", "100",
                 "--batch-size", "8", "--device", "cpu", "--seed", "0", "--tokenizer", "pca",
                 "--out", runs / "dit-pca" / "seed0")
    step_two = json.loads((runs / "dit-pca" / "seed0" / "metrics.jsonl").read_text().splitlines()[0])

    suite(tmp_path)                                                     # raises if a run failed
    resumed = [json.loads(line) for line in (runs / "dit-pca" / "seed0" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in resumed] == [2, 3] and resumed[0] == step_two   # continued, not redone
    for name in ("maskgit", "givt", "mar", "dit", "jepa_maskgit", "maskgit-random", "dit-discrete-dropout",
                 "mar-codebook", "givt-codebook", "ar", "ar-gmm"):
        assert launches(runs / name / "seed0") == 1, name
    for name in ("maskgit", "givt", "mar", "dit"):                       # the time course: 3 -> 6 steps
        assert [m["step"] for m in map(json.loads, open(runs / "long" / name / "seed0" / "metrics.jsonl"))] \
            == [2, 3, 4, 6]
    results = tmp_path / "results"
    for picture in ("ladder", "conditioning", "jepa", "order", "tokenizer", "causal", "time-course", "novel-samples"):
        assert (results / f"{picture}.png").stat().st_size > 10_000, picture
    index = (results / "README.md").read_text()
    for heading in ("1. The ladder", "2. Conditioning", "3. The intervention", "4. MaskGIT's unmasking order",
                    "5. The tokenizer", "6. Causal order", "7. Retrieval", "8. The time course",
                    "9. Time to composition",
                    "What the novel compositions look like"):
        assert f"## {heading}" in index, heading
    assert "| dit-discrete-dropout | `dit.py --cond discrete-dropout --steps 3` |" in index
    assert "97.3 / 99.0 / 96.9" in index and "90.2 / 64.1 / 46.9" in index  # the paper beside ours

    # again: nothing finished runs again; a deleted run alone is redone
    (tmp_path / "results" / "ladder.png").unlink()
    for path in sorted((runs / "givt").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    suite(tmp_path)
    assert launches(runs / "givt" / "seed0") == 1 and launches(runs / "dit" / "seed0") == 1
    assert launches(runs / "long" / "dit" / "seed0") == 1
    assert (tmp_path / "results" / "ladder.png").exists()

    # judged at an earlier evaluation, with one experiment's run missing: no reading is made up for it
    shutil.rmtree(runs / "dit-discrete")
    suite(tmp_path, "--report-only", "--step", "2", "--results", tmp_path / "at2")
    index = (tmp_path / "at2" / "README.md").read_text()
    assert "evaluation at step 2 (%" in index and "--report-only --step 2" in index
    assert "Not run yet: dit-discrete." in index and "## 1. The ladder" in index
    assert "novel-samples.png" not in index                     # samples are kept from the last evaluation only


def test_bad_suite_flags(tmp_path, capsys):
    for flags, message in ((["--budget", "huge"], "invalid choice: 'huge'"),
                           (["--workers", "0"], "--workers must be a positive integer, got 0"),
                           (["--report-only", "--step", "-5"], "--step must be a positive integer, got -5")):
        with pytest.raises(SystemExit) as exit:
            suite(tmp_path, *flags)
        said = capsys.readouterr().err
        assert exit.value.code == 2 and message in said, said[-500:]
    assert not (tmp_path / "runs").exists() and not (tmp_path / "results").exists()


def test_ctrl_c_stops_the_suite_and_starts_no_more_runs(tmp_path):
    runs = tmp_path / "runs"
    process = subprocess.Popen([sys.executable, SCRIPT, "--budget", "tiny", "--device", "cpu", "--workers", "2",
                                "--runs", str(runs), "--results", str(tmp_path / "results")], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as in a terminal
    deadline = time.time() + 300
    while not list(runs.glob("*/seed0/log.txt")) and time.time() < deadline:   # the first runs have started
        time.sleep(0.2)
    time.sleep(1)
    os.killpg(process.pid, signal.SIGINT)                                       # Ctrl-C reaches the whole group
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 1 and "interrupted; run the same command again to resume" in stderr, stderr[-2000:]
    started = sorted(runs.glob("**/log.txt"))
    assert 1 <= len(started) <= 4, started                                      # not the 17 runs of the suite
    time.sleep(3)
    assert sorted(runs.glob("**/log.txt")) == started                           # and nothing left running
    assert not (tmp_path / "results").exists()


FAKE_RUN = """
import sys, time
seed = int(sys.argv[sys.argv.index("--seed") + 1])
print(f"dit:   1%|  5/1000 [00:01<00:10, {1.5 * seed:.2f}it/s]", end="\\r", flush=True)
time.sleep(60)                                   # until rate_scan.sh interrupts it
"""


def test_the_rate_scan_launches_w_copies_and_sums_their_rates(tmp_path):
    """rate_scan.sh against a stand-in for dit.py that reports a known rate (1.5 x its seed)."""
    fake = tmp_path / "fake_python.sh"
    (tmp_path / "fake_run.py").write_text(FAKE_RUN)
    fake.write_text(f"#!/bin/bash\nshift\nexec {sys.executable} {tmp_path / 'fake_run.py'} \"$@\"\n")
    fake.chmod(0o755)
    environment = dict(os.environ, DEVICE="cpu", COUNTS="1 2", SECONDS_EACH="2", LOGS=str(tmp_path / "logs"),
                       PYTHON=str(fake))
    result = subprocess.run(["bash", os.path.join(ROOT, "tools", "rate_scan.sh")], env=environment,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-1000:]
    assert result.stdout.splitlines() == ["W=1 per-run it/s: 1.50 | total 1.5",
                                          "W=2 per-run it/s: 1.50 3.00 | total 4.5"], result.stdout


def test_collect_names_a_setting_by_its_flags_away_from_the_defaults():
    import collect
    config = json.load(open(os.path.join(ROOT, "results", "ladder", "runs", "maskgit", "config.json")))
    assert collect.setting(config) == "maskgit.py"
    assert collect.setting({**config, "lr": 3e-4, "label_smoothing": 0.1}) == "maskgit.py --label-smoothing 0.1 --lr 0.0003"
    new = {"model": "dit", "cond": "continuous", "time_dist": "logit-normal"}
    assert collect.setting(new) == "dit.py"
    assert collect.setting({**new, "time_dist": "uniform"}) == "dit.py --time-dist uniform"
    # runs written before the flag existed have no time_dist: they drew t uniformly
    assert collect.setting({"model": "mar", "cond": "dropout"}) == "mar.py --cond dropout --time-dist uniform"
    # a model's own knobs and a longer run are settings of their own, not more seeds of the default
    givt = json.load(open(os.path.join(ROOT, "results", "ladder", "runs", "givt", "config.json")))
    assert collect.setting(givt) == "givt.py"
    assert collect.setting({**givt, "components": 16, "temperature": 0.0, "steps": 5000}) == \
        "givt.py --components 16 --steps 5000 --temperature 0.0"
    assert collect.setting({**givt, "mask_schedule": "linear"}) == "givt.py --mask-schedule linear"


def test_noise_levels_reads_a_dit_checkpoint_at_every_level(tiny_run, capsys):
    import noise_levels
    out = tiny_run("dit.py")                                          # 4 steps, evaluated at 4
    step, time_dist, rows = noise_levels.errors(str(out), n=32)
    assert (step, time_dist) == (4, "logit-normal") and list(rows) == ["training", "fresh seen", "fresh 111"]
    for values in rows.values():
        assert len(values) == len(noise_levels.LEVELS) and all(0 < v < 10 for v in values)
    noise_levels.main([str(out), "--images", "16"])
    assert capsys.readouterr().out.count(f"| `{out}` | 4 | logit-normal |") == 3


@pytest.mark.parametrize("script, change", [("givt.py", "mixture_temperature=0"), ("jepa_maskgit.py", "sample_steps=3"),
                                            ("mar.py", "diffusion_steps=3")])
def test_resample_redraws_a_run_and_changes_only_what_it_is_told(tmp_path, tiny_run, capsys, script, change):
    import numpy as np
    import resample
    out = tiny_run(script)                                            # 4 steps, evaluated at 4; only read here
    same, changed = tmp_path / "same", tmp_path / "changed"
    resample.main([str(out), "--out", str(same)])
    original, redrawn = np.load(out / "samples.npz"), np.load(same / "samples.npz")
    assert (original["images"] == redrawn["images"]).all()           # nothing changed: the run's own samples
    resample.main([str(out), "--out", str(changed), "--set", change])
    assert (np.load(changed / "samples.npz")["images"] != original["images"]).any()
    key, value = change.split("=")
    config = json.loads((changed / "config.json").read_text())
    assert float(config[key]) == float(value) and config["resampled_from"] == str(out)
    [line] = [json.loads(x) for x in (changed / "metrics.jsonl").read_text().splitlines()]
    last = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert line["step"] == 4 and line["loss"] == last["loss"]
    capsys.readouterr()
    for argv, said in (([str(out), "--out", str(tmp_path / "x"), "--set", "width=8"], "'width' is not one of them"),
                       ([str(out), "--out", str(tmp_path / "x"), "--set", "sample_steps=0"], "a positive integer"),
                       ([str(out), "--out", str(tmp_path / "x"), "--set", "sample_steps"], "a positive integer"),
                       ([str(out), "--out", str(changed)], "already holds metrics.jsonl")):
        with pytest.raises(SystemExit) as exit:
            resample.main(argv)
        assert said in str(exit.value.code)
    assert not (tmp_path / "x").exists()
    if script != "mar.py":                                          # the masked models' order, checked by name
        with pytest.raises(SystemExit, match="unmask must be confidence or random"):
            resample.main([str(out), "--out", str(tmp_path / "x"), "--set", "unmask=confidance"])


def test_givt_scales_reads_the_sigma_the_head_gives(tmp_path, tiny_run, capsys):
    import math

    import torch

    import givt
    import givt_scales
    out = tmp_path / "givt"
    shutil.copytree(tiny_run("givt.py"), out)                         # its checkpoint is changed below
    state = torch.load(out / "ckpt.pt", weights_only=True)
    k, dim = state["config"]["components"], 48
    for bias, sigma in ((0.0, math.log(2) + givt.SCALE_FLOOR), (-30.0, givt.SCALE_FLOOR)):
        state["ema"]["head.weight"].zero_()                              # every token: the bias alone
        state["ema"]["head.bias"][k * (1 + dim):] = bias                  # softplus(bias) + floor
        torch.save(state, out / "ckpt.pt")
        step, tokenizer, found = givt_scales.scales(str(out), n=16)
        assert (step, tokenizer, list(found)) == (4, "pixels", ["fresh seen", "fresh 111"])
        for values, edge in found.values():
            assert values.shape[1] == dim and torch.allclose(values, torch.full_like(values, sigma), atol=1e-6)
            assert edge.shape == values.shape[:1] and edge.any() and not edge.all()   # shapes have edges
    givt_scales.main([str(out), "--images", "16"])
    table = capsys.readouterr().out
    assert table.count(f"| `{out}` | 4 | pixels |") == 2 and table.count(" | 100.0 | 0.0 / 0.0 |") == 2   # all at the floor
