"""tools/gpu_check.py: its runs are every generator's own default (the long runs first, where
asked); at a tiny budget it runs end to end on the CPU, and every number of its summary is read
from the runs' own files (metrics.jsonl, config.json, wall_seconds.txt)."""
import json
import os
import subprocess
import sys

import pytest
import torch

import runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gpu_check  # noqa: E402

NO_OVERRIDES = dict.fromkeys(gpu_check.BUDGET_FLAGS)


def parsed(job):
    """The job's command line read by its own script's parser, as the run will read it."""
    argv, script = job[2], job[4]
    assert argv[1] == os.path.join(ROOT, script)
    return vars(runs.script(script[:-3]).parse(argv[2:])[1])


def test_the_default_runs_are_each_scripts_own_defaults_and_the_long_runs_come_first(tmp_path):
    jobs = gpu_check.plan(str(tmp_path), "default", NO_OVERRIDES, True, 10000, 0, "cuda")
    long = [f"{model}-10000steps" for model in gpu_check.LONG]
    assert [job[3] for job in jobs] == [*long, *runs.MODELS]
    for job in jobs:
        folder, steps, name, script = job[0], job[1], job[3], job[4]
        own = vars(runs.script(script[:-3]).parse([])[1])     # `python <script>` with no flags
        got = parsed(job)
        for flag in gpu_check.BUDGET_FLAGS:
            if flag == "steps" and name.endswith("-10000steps"):
                assert got[flag] == steps == 10000
            else:
                assert got.get(flag) == own.get(flag), (name, flag)
        assert (got["device"], got["out"], got["seed"]) == ("cuda", folder, 0)
        assert folder == os.path.join(str(tmp_path), "runs", name) and steps == got["steps"]
    objects = parsed(jobs[-1])
    assert (objects["steps"], objects["samples_per_comp"]) == (1500, 16)   # objects.py's own
    assert "train_per_comp" not in objects


def test_a_budget_flag_changes_every_run_and_objects_gets_no_training_set_flag(tmp_path):
    overrides = dict(NO_OVERRIDES, steps=40, train_per_comp=7)
    for job in gpu_check.plan(str(tmp_path), "tiny", overrides, False, 3, 1, "cpu"):
        got = parsed(job)
        budget = (got["steps"], got["eval_every"], got["samples_per_comp"], got["seed"])
        assert budget == (40, 2, 2, 1)
        assert got.get("train_per_comp", 7) == 7
        assert ("--train-per-comp" in job[2]) == (job[4] != "objects.py")


def test_bad_input_is_refused_with_the_value_named(tmp_path, capsys):
    out = str(tmp_path / "check")
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit):
            gpu_check.main(["--out", out])                       # --device cuda is the default
        assert "--device cuda: no CUDA GPU is visible here" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        gpu_check.main(["--out", out, "--device", "cpu", "--steps", "0"])
    assert "--steps: must be a positive integer, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="--eval-every 5 is larger than the 2 steps of maskgit"):
        gpu_check.main(["--out", out, "--device", "cpu", "--budget", "tiny", "--eval-every", "5"])
    with pytest.raises(SystemExit):
        gpu_check.main(["--out", out, "--report-only"])
    assert "--report-only: no gpu.json in" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit):
        gpu_check.main(["--out", str(tmp_path / "file"), "--device", "cpu"])
    assert "is a file, not a folder" in capsys.readouterr().err
    assert not os.path.exists(out)


def test_time_to_the_target_is_the_first_evaluation_at_or_over_it():
    metrics = [{"step": s, "seconds": t, "level2": v} for s, t, v in
               ((10, 1.0, 0.5), (20, 2.0, 0.9), (30, 3.0, 0.95), (40, 4.0, 0.2))]
    assert gpu_check.first_reaching(metrics, "level2") == (20, 2.0)
    assert gpu_check.first_reaching(metrics[:1], "level2") is None


def fabricate(folder, lines, walls, device="cuda"):
    """A run folder as a run leaves it: config.json, metrics.jsonl, wall_seconds.txt."""
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"device": device, "provenance": {"gpu": "a GPU"}}, f)
    with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    with open(os.path.join(folder, "wall_seconds.txt"), "w") as f:
        f.write("".join(f"{wall}\n" for wall in walls))


def shapes(step, seconds, seen, level1, level2, probe_111):
    probe = dict.fromkeys(("000", "001", "010", "011", "100", "101", "110"), 0.125)
    return {"step": step, "seconds": seconds, "seen": seen, "level1": level1, "level2": level2,
            "probe_acc": {**probe, "111": probe_111}}


def test_a_row_and_its_table_line_are_read_from_the_run_folder(tmp_path):
    dit = str(tmp_path / "dit")
    fabricate(dit, [shapes(250, 30.5, 1.0, 0.5, 0.25, 0.0), shapes(500, 61.2, 1.0, 1.0, 0.9, 0.5),
                    shapes(2000, 240.4, 0.875, 0.75, 0.625, 0.375)], [100.25, 200.5])
    row = gpu_check.row((dit, 2000, ["python", "dit.py"], "dit", "dit.py"), failed=[])
    assert (row["status"], row["steps"], row["evaluations"], row["last_step"]) == \
        ("finished", 2000, 3, 2000)
    assert (row["reached_step"], row["reached_seconds"]) == (500, 61.2)
    assert (row["run_seconds"], row["wall_seconds"]) == (240.4, 300.8)    # both launches
    assert row["readings"] == {"seen": 0.875, "level1": 0.75, "level2": 0.625, "probe_111": 0.375}
    assert (row["device"], row["gpu"], row["target"]) == ("cuda", "a GPU", "level2")
    assert gpu_check.table_line(row) == ("| [`dit.py`](runs/dit/samples.png) | 2000 | step 500, "
                                         "61 s | 240 s | 301 s | 87.5 | 75.0 | 62.5 | 37.5 |")

    mar = str(tmp_path / "mar-4000steps")
    fabricate(mar, [shapes(250, 9.0, 1.0, 0.5, 0.5, 0.0), shapes(500, 18.0, 1.0, 0.5, 0.75, 0.0),
                    shapes(707, 27.0, 1.0, 0.5, 0.125, 0.0)], [40.0])
    row = gpu_check.row((mar, 4000, ["python", "mar.py"], "mar-4000steps", "mar.py"), failed=[])
    assert row["status"] == "stopped at step 707" and row["reached_step"] is None
    assert row["best"] == {"step": 500, "value": 0.75}
    assert gpu_check.table_line(row).startswith(
        "| [`mar.py`](runs/mar-4000steps/samples.png) `mar-4000steps` (stopped at step 707) | "
        "4000 | not reached (best 75.0% at step 500) |")
    assert gpu_check.row((mar, 707, [], "m", "mar.py"), failed=[mar])["status"].startswith("failed")

    objects = str(tmp_path / "objects")
    line = {"exact": {}, "trained": 1.0, "level2": 1.0}                # no level-2 in its world
    fabricate(objects, [dict(line, step=250, seconds=5.0, beyond=0.75),
                        dict(line, step=1500, seconds=50.0, trained=0.8125, beyond=0.9375)], [60])
    row = gpu_check.row((objects, 1500, [], "objects", "objects.py"), failed=[])
    assert (row["target"], row["reached_step"], row["reached_seconds"]) == ("beyond", 1500, 50.0)
    assert row["readings"] == {"trained": 0.8125, "beyond": 0.9375}
    assert gpu_check.table_line(row).endswith(
        "| step 1500, 50 s ¹ | 50 s | 60 s | 81.2 | – | 93.8 | – |")


def doctor(folder, readings):
    """Rewrite a finished run's metrics.jsonl: one line per (step, seconds, {reading: value}), the
    rest of each line copied from its real last evaluation."""
    path = os.path.join(folder, "metrics.jsonl")
    with open(path) as f:
        last = json.loads(f.read().splitlines()[-1])
    lines = []
    for step, seconds, values in readings:
        line = dict(last, step=step, seconds=seconds)
        line["probe_acc"] = dict.fromkeys(last.get("probe_acc", {}), 0.125)
        for key, value in values.items():
            if key == "probe_111":
                line["probe_acc"]["111"] = value
            else:
                line[key] = value
        lines.append(json.dumps(line))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def test_the_tiny_check_runs_end_to_end_and_its_summary_is_read_from_the_runs(tmp_path):
    out = tmp_path / "check"
    gpu_check.main(["--budget", "tiny", "--device", "cpu", "--out", str(out)])
    summary = json.loads((out / "gpu.json").read_text())
    assert [r["run"] for r in summary["runs"]] == list(runs.MODELS)
    assert not (out / "warm-up").exists()
    git = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                         check=False)
    commit = git.stdout.strip() or "unknown"
    assert summary["provenance"]["commit"] == commit
    assert summary["provenance"]["torch"] == torch.__version__
    assert summary["device"] == "cpu" and summary["workers"] == len(runs.MODELS)
    for r in summary["runs"]:
        folder = out / "runs" / r["run"]
        metrics = runs.read_metrics(str(folder))
        config = json.loads((folder / "config.json").read_text())
        assert r["status"] == "finished"
        assert r["steps"] == config["steps"] == metrics[-1]["step"] == 2
        assert (config["device"], config["samples_per_comp"], config["batch_size"]) == ("cpu", 2, 4)
        assert (folder / "samples.png").exists()
        assert (folder / "curves.png").exists() or r["script"] == "objects.py"   # it draws none
        assert r["run_seconds"] == metrics[-1]["seconds"]
        walls = (folder / "wall_seconds.txt").read_text().split()
        assert r["wall_seconds"] == round(sum(map(float, walls)), 1)
        if r["script"] == "objects.py":
            last = metrics[-1]
            assert r["readings"] == {"trained": last["trained"], "beyond": last["beyond"]}
        else:
            assert r["readings"]["probe_111"] == metrics[-1]["probe_acc"]["111"]
            assert r["readings"]["level2"] == metrics[-1]["level2"]

    # Readings no tiny run reaches, written into three runs' files: the summary must follow them.
    doctor(out / "runs" / "dit", [(1, 11.4, {"level2": 0.9}),            # the first at 90%
                                  (2, 22.6, {"seen": 0.75, "level1": 0.625, "level2": 0.25,
                                                 "probe_111": 0.375})])
    doctor(out / "runs" / "givt", [(1, 5.0, {"level2": 0.5}), (2, 9.0, {"level2": 0.875})])
    doctor(out / "runs" / "objects", [(1, 3.0, {"beyond": 0.5}),
                                      (2, 6.0, {"trained": 0.8125, "beyond": 0.9375})])
    gpu_check.main(["--out", str(out), "--budget", "tiny", "--device", "cpu", "--report-only"])
    rows = {r["run"]: r for r in json.loads((out / "gpu.json").read_text())["runs"]}
    dit, givt, objects = rows["dit"], rows["givt"], rows["objects"]
    assert (dit["reached_step"], dit["reached_seconds"], dit["run_seconds"]) == (1, 11.4, 22.6)
    assert dit["readings"] == {"seen": 0.75, "level1": 0.625, "level2": 0.25, "probe_111": 0.375}
    assert givt["reached_step"] is None and givt["best"] == {"step": 2, "value": 0.875}
    reached = (objects["target"], objects["reached_step"], objects["reached_seconds"])
    assert reached == ("beyond", 2, 6.0)
    assert objects["readings"] == {"trained": 0.8125, "beyond": 0.9375}
    table = (out / "gpu.md").read_text()
    wall = f"{dit['wall_seconds']:.0f} s"
    dit_row = (f"| [`dit.py`](runs/dit/samples.png) | 2 | step 1, 11 s | 23 s | {wall} | "
               "75.0 | 62.5 | 25.0 | 37.5 |")
    assert dit_row in table
    assert "| not reached (best 87.5% at step 2) |" in table
    assert "| step 2, 6 s ¹ | 6 s |" in table and "| 81.2 | – | 93.8 | – |" in table
    assert summary["command"] in table and summary["provenance"]["torch"] in table
