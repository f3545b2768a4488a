"""tools/gpu_check.py: its runs are every generator's own default, or the time course with the
long-budget recipe (the long runs first); its speed probe times whole training steps after its
warm-up; at a tiny budget it runs end to end on the CPU, stops at --minutes keeping what finished
and resumes the rest; every number of its summary is read from the runs' own files
(metrics.jsonl, config.json, wall_seconds.txt, the probes' JSON), and --report-only reads the
plan, and the failures, a call recorded."""
import json
import os
import subprocess
import sys
import warnings

import elsewhere
import pytest
import scripts
import torch

import runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gpu_check  # noqa: E402
import reproduce  # noqa: E402

NO_OVERRIDES = dict.fromkeys(gpu_check.BUDGET_FLAGS)


def parsed(job):
    """The job's command line read by its own script's parser, as the run will read it."""
    argv, script = job[2], job[4]
    assert argv[1] == os.path.join(ROOT, script)
    return vars(runs.script(os.path.basename(script)[:-3]).parse(argv[2:])[1])


def test_the_check_runs_each_scripts_own_default(tmp_path):
    jobs = gpu_check.plan(str(tmp_path), "default", NO_OVERRIDES, 0, "cuda")
    assert [job[3] for job in jobs] == list(runs.MODELS)
    for job in jobs:
        folder, steps, name, script = job[0], job[1], job[3], job[4]
        own = vars(runs.script(os.path.basename(script)[:-3]).parse([])[1])     # with no flags
        got = parsed(job)
        assert got == dict(own, device="cuda", out=folder), name
        assert folder == os.path.join(str(tmp_path), "runs", name) and steps == got["steps"]
    objects = parsed(jobs[-1])
    assert (objects["steps"], objects["samples_per_comp"]) == (1500, 16)   # objects.py's own
    assert "train_per_comp" not in objects


def test_a_budget_flag_changes_every_run_and_objects_gets_no_training_set_flag(tmp_path):
    overrides = dict(NO_OVERRIDES, steps=40, train_per_comp=7)
    for job in gpu_check.plan(str(tmp_path), "tiny", overrides, 1, "cpu"):
        got = parsed(job)
        budget = (got["steps"], got["eval_every"], got["samples_per_comp"], got["seed"])
        assert budget == (40, 2, 2, 1)
        assert got.get("train_per_comp", 7) == 7
        assert ("--train-per-comp" in job[2]) == (job[4] != "studies/objects.py")


def test_the_time_course_runs_the_long_runs_first_then_the_ladder_seed_by_seed(tmp_path):
    jobs = gpu_check.course_plan(str(tmp_path), "default", NO_OVERRIDES, "cuda")
    ladder = ["maskgit", "jepa_maskgit", "givt", "mar", "dit"]
    assert [job[3] for job in jobs] == [
        "maskgit-60000steps-seed0", "dit-60000steps-seed0",
        *[f"{model}-10000steps-seed{seed}" for seed in (0, 1, 2) for model in ladder]]
    for job in jobs:
        model, steps, seed = os.path.basename(job[4])[:-3], job[1], int(job[3][-1])
        own = vars(runs.script(model).parse(gpu_check.RECIPE)[1])        # the recipe, and no more
        assert parsed(job) == dict(own, steps=steps, seed=seed, device="cuda", out=job[0]), job[3]
    recipe = {job[3]: parsed(job)["lr_schedule"] for job in jobs}
    assert set(recipe.values()) == {"cosine"}                          # RECIPE's own setting
    tiny = gpu_check.course_plan(str(tmp_path), "tiny", NO_OVERRIDES, "cpu", ["dit", "objects"])
    assert [job[3] for job in tiny] == ["dit-6steps-seed0", *[f"dit-3steps-seed{s}"
                                                              for s in (0, 1, 2)]]


def test_bad_input_is_refused_with_the_value_named(tmp_path, capsys):
    out = str(tmp_path / "check")
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit):
            gpu_check.main(["--out", out])                       # --device cuda is the default
        assert "--device cuda: no CUDA GPU is visible here" in capsys.readouterr().err
    for flags, said in ((["--steps", "0"], "--steps: must be a positive integer, got 0"),
                        (["--minutes", "0"], "--minutes: must be a positive number of minutes"),
                        (["--models", "vae"], "invalid choice: 'vae'"),
                        (["--time-course", "--steps", "9"], "the time course's runs have their")):
        with pytest.raises(SystemExit):
            gpu_check.main(["--out", out, "--device", "cpu", *flags])
        assert said in capsys.readouterr().err, flags
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
                    shapes(2000, 250.0, 0.875, 0.75, 0.625, 0.375)], [100.25, 200.5])
    row = gpu_check.row((dit, 2000, ["python", "dit.py"], "dit", "dit.py"), failed=[])
    assert (row["status"], row["steps"], row["evaluations"], row["last_step"]) == \
        ("finished", 2000, 3, 2000)
    assert (row["reached_step"], row["reached_seconds"]) == (500, 61.2)
    assert (row["run_seconds"], row["wall_seconds"]) == (250.0, 300.8)    # both launches
    assert row["steps_per_second"] == 8.0                             # 2000 steps in 250 s
    assert row["readings"] == {"seen": 0.875, "level1": 0.75, "level2": 0.625, "probe_111": 0.375}
    assert (row["device"], row["gpu"], row["target"]) == ("cuda", "a GPU", "level2")
    assert gpu_check.table_line(row) == ("| [`dit.py`](runs/dit/samples.png) | 2000 | step 500, "
                                         "61 s | 250 s | 8 | 301 s | 87.5 | 75.0 | 62.5 | 37.5 |")

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
    never = gpu_check.row((str(tmp_path / "never"), 9, "python mar.py", "never", "mar.py"), [])
    assert (never["status"], never["command"]) == ("not started", "python mar.py")

    objects = str(tmp_path / "objects")
    line = {"exact": {}, "trained": 1.0, "level2": 1.0}                # no level-2 in its world
    fabricate(objects, [dict(line, step=250, seconds=5.0, beyond=0.75),
                        dict(line, step=1500, seconds=50.0, trained=0.8125, beyond=0.9375)], [60])
    row = gpu_check.row((objects, 1500, [], "objects", "studies/objects.py"), failed=[])
    assert (row["target"], row["reached_step"], row["reached_seconds"]) == ("beyond", 1500, 50.0)
    assert row["readings"] == {"trained": 0.8125, "beyond": 0.9375}
    assert gpu_check.table_line(row).endswith(
        "| step 1500, 50 s ¹ | 50 s | 30 | 60 s | 81.2 | – | 93.8 | – |")


def test_a_speed_line_reads_the_probes():
    found = {"alone": {"steps": 400, "seconds": 10.0, "steps_per_second": 40.5,
                       "waits_per_step": 1.0, "peak_memory_gib": 1.25},
             "at_once": 8, "each": 31.25, "in_all": 250.0}
    assert gpu_check.speed_line("dit", found) == "| `dit.py` | 40.5 | 31.25 | 250 | 1.25 GiB | 1 |"
    off_cuda = dict(found, alone=dict(found["alone"], waits_per_step=None, peak_memory_gib=None),
                    each=None, in_all=None)
    assert gpu_check.speed_line("dit", off_cuda) == "| `dit.py` | 40.5 | – | – | – | – |"


def test_speeds_are_the_mean_and_the_sum_of_the_runs_at_once(monkeypatch):
    """Probes that report different speeds: each is their mean, in_all their sum (one probe
    alone first, then at_once of them)."""
    asked = []

    def probe(model, count, device, settings, folder):
        asked.append(count)
        return [{"steps_per_second": s} for s in ([9.0] if count == 1 else [1.0, 2.0, 6.0])]

    monkeypatch.setattr(gpu_check, "probes", probe)
    found = gpu_check.speeds("out", ["dit"], "cpu", 3, "tiny")["dit"]
    assert asked == [1, 3] and found["alone"] == {"steps_per_second": 9.0}
    assert (found["at_once"], found["each"], found["in_all"]) == (3, 3.0, 9.0)
    assert gpu_check.speeds("out", ["dit"], "cpu", 1, "tiny")["dit"]["each"] is None


def test_the_cuda_version_is_reported_on_a_cuda_run_only(monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", "12.4")             # a CUDA build on a CPU run
    found = gpu_check.provenance("cpu", None)
    assert (found["cuda"], found["gpus"], found["gpu_memory_gib"]) == (None, 0, None)
    summary = {"command": "python tools/gpu_check.py", "provenance": found, "workers": 1,
               "device": "cpu", "minutes": 0.5, "warm_up_seconds": 3.0, "mode": "check",
               "runs": []}
    assert "CUDA" not in gpu_check.markdown(summary)


def test_the_probe_times_whole_steps_after_its_warm_up(tmp_path, monkeypatch):
    """Its clock (a fake one here, 0.25 s a reading) starts at the warm-up's end and stops at
    the first step past its seconds; the steps it counts are those the run trained meanwhile."""
    seen, learning_rate, clock = [], runs.learning_rate, iter(range(1000))

    def counted(config, step):
        seen.append(step)
        return learning_rate(config, step)
    monkeypatch.setattr(runs, "learning_rate", counted)
    monkeypatch.setattr(gpu_check.time, "perf_counter", lambda: next(clock) / 4)
    settings = dict(gpu_check.PROBE["tiny"], warm_up=3, seconds=1.0)
    found = gpu_check.probe("dit", "cpu", settings, str(tmp_path / "dit.json"))
    assert found == json.loads((tmp_path / "dit.json").read_text())
    assert (found["steps"], found["seconds"], found["steps_per_second"]) == (4, 1.25, 3.2)
    assert seen == list(range(3 + 4))                       # 3 warm-up steps, then the 4 timed
    assert found["waits_per_step"] is None and found["peak_memory_gib"] is None   # not CUDA
    assert runs.learning_rate is counted                                  # put back
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for said in ("called a synchronizing CUDA operation", "something else",
                     "called a synchronizing CUDA operation"):
            warnings.warn(said)
    assert gpu_check.waits(caught) == 2


def test_report_only_reads_the_plan_and_the_failures_a_call_recorded(tmp_path):
    """Not the flags: a time course's runs come back without --time-course, failures stay."""
    out = tmp_path / "course"
    jobs = gpu_check.course_plan(str(out), "tiny", NO_OVERRIDES, "cpu", ["dit"])[:2]
    fabricate(jobs[0][0], [shapes(2, 1.0, 1.0, 0.5, 0.25, 0.0)], [5.0])
    fabricate(jobs[1][0], [shapes(2, 1.0, 1.0, 0.5, 0.5, 0.0)], [5.0])
    meta = {"command": "python tools/gpu_check.py --time-course", "mode": "time course",
            "recipe": gpu_check.RECIPE, "device": "cpu", "budget": "tiny", "workers": 2,
            "provenance": gpu_check.provenance("cpu", None), "minutes": 0.5,
            "warm_up_seconds": 3.0}
    gpu_check.write_summary(str(out), jobs, [jobs[1][0]], meta)
    gpu_check.main(["--out", str(out), "--report-only"])
    summary = json.loads((out / "gpu.json").read_text())
    rows = {r["run"]: r for r in summary["runs"]}
    assert list(rows) == ["dit-6steps-seed0", "dit-3steps-seed0"]
    assert rows["dit-6steps-seed0"]["status"] == "stopped at step 2"
    assert rows["dit-3steps-seed0"]["status"].startswith("failed")
    assert rows["dit-6steps-seed0"]["command"] == gpu_check.shown(jobs[0][2])
    assert "--lr-schedule cosine" in (out / "gpu.md").read_text()


def test_an_interrupted_call_keeps_the_runs_that_failed_before_it(tmp_path, monkeypatch):
    out = tmp_path / "check"

    def interrupted(jobs, workers, gpus, deadline=None, failed=None):
        failed.append(os.path.relpath(jobs[0][0], ROOT))                  # a run failed,
        raise SystemExit("interrupted")                                   # then came Ctrl-C
    monkeypatch.setattr(gpu_check, "warm_up", lambda *args: 0.0)
    monkeypatch.setattr(reproduce, "run_all", interrupted)
    with pytest.raises(SystemExit, match="interrupted; the same command again resumes"):
        gpu_check.main(["--time-course", "--budget", "tiny", "--device", "cpu", "--models",
                        "dit", "--out", str(out)])
    statuses = [r["status"] for r in json.loads((out / "gpu.json").read_text())["runs"]]
    assert statuses == ["failed (see log.txt)", *["not started"] * 3]


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
    gpu_check.main(["--budget", "tiny", "--device", "cpu", "--models", "dit", "--at-once", "2",
                    "--out", str(out)])
    summary = json.loads((out / "gpu.json").read_text())
    assert [r["run"] for r in summary["runs"]] == ["dit"] and not (out / "warm-up").exists()
    git = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                         check=False)
    assert summary["provenance"]["commit"] == (git.stdout.strip() or "unknown")
    assert summary["provenance"]["torch"] == torch.__version__
    assert (summary["device"], summary["workers"], summary["at_once"]) == ("cpu", 1, 2)
    speed = summary["speed"]["dit"]                          # read from the probes' own files
    alone = json.loads((out / "speed" / "dit-1at-once-0.json").read_text())
    together = [json.loads((out / "speed" / f"dit-2at-once-{i}.json").read_text())
                ["steps_per_second"] for i in (0, 1)]
    assert speed["alone"] == alone and alone["steps"] >= 1
    assert (speed["each"], speed["in_all"]) == (round(sum(together) / 2, 2),
                                                round(sum(together), 2))
    [r] = summary["runs"]
    folder = out / "runs" / "dit"
    metrics = runs.read_metrics(str(folder))
    config = json.loads((folder / "config.json").read_text())
    assert r["status"] == "finished" and r["steps"] == config["steps"] == metrics[-1]["step"] == 2
    assert (config["device"], config["samples_per_comp"], config["batch_size"]) == ("cpu", 2, 4)
    assert (folder / "samples.png").exists() and (folder / "curves.png").exists()
    assert r["run_seconds"] == metrics[-1]["seconds"]
    assert r["wall_seconds"] == round(sum(map(float, (folder / "wall_seconds.txt").read_text()
                                              .split())), 1)
    assert r["readings"]["probe_111"] == metrics[-1]["probe_acc"]["111"]
    assert r["readings"]["level2"] == metrics[-1]["level2"]
    table = (out / "gpu.md").read_text()
    assert gpu_check.speed_line("dit", speed) in table

    # Readings no tiny run reaches, written into the run's files: the summary must follow them.
    doctor(folder, [(1, 11.4, {"level2": 0.9}), (2, 22.6, {"seen": 0.75, "level1": 0.625,
                                                          "level2": 0.25, "probe_111": 0.375})])
    gpu_check.main(["--out", str(out), "--report-only"])
    again = json.loads((out / "gpu.json").read_text())
    [dit] = again["runs"]
    assert (dit["reached_step"], dit["reached_seconds"], dit["run_seconds"]) == (1, 11.4, 22.6)
    assert dit["readings"] == {"seen": 0.75, "level1": 0.625, "level2": 0.25, "probe_111": 0.375}
    assert again["speed"] == summary["speed"]
    table = (out / "gpu.md").read_text()
    wall = f"{dit['wall_seconds']:.0f} s"
    assert (f"| [`dit.py`](runs/dit/samples.png) | 2 | step 1, 11 s | 23 s | 0.1 | {wall} | "
            "75.0 | 62.5 | 25.0 | 37.5 |") in table
    assert summary["command"] in table and summary["provenance"]["torch"] in table


def test_the_time_course_stops_at_minutes_keeping_what_it_has_and_resumes(tmp_path, monkeypatch):
    """The tiny time course of dit.py (its long run and one ladder seed): a long run stopped at
    step 4 of 6 keeps its checkpoint; with no time left, no run starts; the same command again
    resumes it (continued, not rerun) and runs the rest."""
    out = tmp_path / "course"
    monkeypatch.setattr(gpu_check, "COURSE", ((("dit",), 60000, (0,)), (("dit",), 10000, (0,))))
    monkeypatch.setattr(gpu_check, "warm_up", lambda *args: 0.0)     # the end-to-end test's
    command = ["--time-course", "--budget", "tiny", "--device", "cpu", "--models", "dit",
               "--out", str(out)]
    long, ladder = gpu_check.course_plan(str(out), "tiny", NO_OVERRIDES, "cpu", ["dit"])
    flags = long[2][2:]
    flags[flags.index("--steps") + 1] = "4"                          # stopped at step 4 of 6
    scripts.main("dit.py", *flags)
    kept = (out / "runs" / long[3] / "metrics.jsonl").read_text()
    monkeypatch.setattr(gpu_check, "GRACE", 60)                      # no time left at all
    gpu_check.main([*command, "--minutes", "1"])
    rows = json.loads((out / "gpu.json").read_text())["runs"]
    assert [r["status"] for r in rows] == ["stopped at step 4", "not started"]
    assert (out / "runs" / long[3] / "ckpt.pt").exists()
    gpu_check.main(command)
    rows = json.loads((out / "gpu.json").read_text())["runs"]
    assert [r["status"] for r in rows] == ["finished", "finished"]
    history = (out / "runs" / long[3] / "metrics.jsonl").read_text()
    assert history.startswith(kept) and [m["step"] for m in runs.read_metrics(long[0])] == \
        [2, 3, 4, 6]
    assert len((out / "runs" / long[3] / "wall_seconds.txt").read_text().split()) == 1
    for job in (long, ladder):
        config = json.loads((out / "runs" / job[3] / "config.json").read_text())
        assert (config["lr_schedule"], config["steps"]) == ("cosine", job[1])


def test_the_check_counts_the_gpus_torch_sees_and_hands_the_count_to_every_run(tmp_path,
                                                                                 monkeypatch):
    """On a simulated machine of three GPUs: the provenance says 3, and the warm-up and the runs
    are spread over 3 (reproduce.execute gives each slot its own); on the CPU, none."""
    elsewhere.simulated_gpus(monkeypatch)
    found = gpu_check.provenance("cuda", None)
    assert (found["gpus"], found["gpu_memory_gib"], found["cuda"], found["gpu"]) == \
        (3, 80.0, "12.4", "Simulated GPU")
    handed = {}
    monkeypatch.setattr(gpu_check, "warm_up", lambda out, device, gpus: handed.update(
        warm_up=gpus) or 0.0)
    monkeypatch.setattr(gpu_check, "speeds", lambda *args: {})
    monkeypatch.setattr(reproduce, "run_all", lambda jobs, workers, gpus, deadline=None,
                        failed=None: handed.update(runs=gpus) or [])
    for device, gpus in (("cuda", 3), ("cpu", 0)):
        out = tmp_path / device
        gpu_check.main(["--device", device, "--models", "dit", "--out", str(out)])
        assert handed == {"warm_up": gpus, "runs": gpus}, device
        summary = json.loads((out / "gpu.json").read_text())
        assert summary["provenance"]["gpus"] == gpus, device

