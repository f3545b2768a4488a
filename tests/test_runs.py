"""The shared run plumbing (runs.py): the run files, kept samples and rejudging."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import data
import probe
import runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))


@pytest.fixture(scope="module")
def real():
    return data.make_dataset(data.COMPOSITIONS, 8, seed=probe.HELD_OUT_SEED + 9)


def test_evaluation_steps_are_log_spaced_and_end_at_the_last_step():
    steps = sorted(runs.evaluation_steps(3000, 250))
    assert steps[0] == 250 and steps[-1] == 3000
    ratios = np.diff(np.log(steps[:-1]))
    assert np.allclose(ratios, np.log(2) / 2, atol=0.01)
    assert runs.evaluation_steps(5, 5) == {5}


def test_learning_rate_warms_up_then_holds_or_decays_to_zero():
    config = dict(lr=1e-3, steps=2000, lr_schedule="constant", warm_up_steps=200)
    assert runs.learning_rate(config, 0) == pytest.approx(1e-3 / 200)
    assert runs.learning_rate(config, 199) == pytest.approx(1e-3)
    assert runs.learning_rate(config, 1999) == pytest.approx(1e-3)
    config["lr_schedule"] = "cosine"
    assert runs.learning_rate(config, 199) == pytest.approx(
        1e-3 * (1 + np.cos(np.pi * 199 / 2000)) / 2)
    assert runs.learning_rate(config, 1000) == pytest.approx(0.5e-3)
    assert runs.learning_rate(config, 1999) < 1e-8
    rates = [runs.learning_rate(config, s) for s in range(200, 2000)]
    assert all(a >= b for a, b in zip(rates, rates[1:]))


def test_record_writes_the_run_files_and_keeps_every_evaluations_samples(tmp_path, real):
    images, bits, _ = real
    for step in (10, 20):
        metrics = runs.record(str(tmp_path), step, 0.5, images, bits, title="test")
    lines = [json.loads(line) for line in open(tmp_path / "metrics.jsonl")]
    assert [m["step"] for m in lines] == [10, 20]
    for key in ("step", "loss", "acc", "fidelity", "probe_acc", "seen", "level1", "level2",
                "malformed"):
        assert key in lines[-1], key
    for step in (10, 20):
        kept = np.load(tmp_path / "samples" / f"step_{step}.npz")
        assert kept["images"].dtype == np.uint8 and kept["images"].shape == (64, 32, 32, 3)
        assert kept["factors"].dtype == np.int64 and (kept["factors"] == bits).all()
    assert os.path.getsize(tmp_path / "samples.png") > 1000
    assert os.path.getsize(tmp_path / "curves.png") > 1000
    assert metrics == lines[-1]


def test_rejudge_reproduces_the_metrics_from_the_kept_samples(tmp_path, real, capsys):
    images, bits, _ = real
    runs.record(str(tmp_path), 10, 0.7, images[::-1] * 0, bits[::-1], title="test")  # all wrong
    runs.record(str(tmp_path), 20, 0.5, images, bits, title="test")
    before = runs.read_metrics(str(tmp_path))
    with open(tmp_path / "metrics.jsonl", "w") as f:                      # an older judge's numbers
        f.writelines(json.dumps(dict(m, acc={c: 0.5 for c in m["acc"]}, seen=0.5)) + "\n"
                     for m in before)
    import rejudge
    capsys.readouterr()
    rejudge.main([str(tmp_path)])                                # tools/rejudge.py, in this process
    assert runs.read_metrics(str(tmp_path)) == before
    assert before[0]["seen"] == 0 and before[1]["seen"] == 1.0
    assert "step 20: seen 100.0" in capsys.readouterr().out


def test_rejudge_refuses_a_run_without_kept_samples(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 5, "loss": 1.0}) + "\n")
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "rejudge.py"),
                             str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "no kept samples for steps [5]" in result.stderr


def test_keep_checkpoints_keeps_each_evaluations_ema_network(tmp_path):
    from scripts import FAST, main
    out = tmp_path / "run"
    main("dit.py", *FAST, "--keep-checkpoints", "--out", out)              # in this process
    kept = sorted(os.listdir(out / "checkpoints"))
    assert kept == ["step_2.pt", "step_3.pt", "step_4.pt"]               # evaluations at 2, 3 and 4
    last = torch.load(out / "checkpoints" / "step_4.pt", weights_only=True)
    final = torch.load(out / "ckpt.pt", weights_only=True)
    assert last["step"] == 4 and last["config"]["keep_checkpoints"]
    assert all(torch.equal(last["ema"][k], final["ema"][k]) for k in final["ema"])
