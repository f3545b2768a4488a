"""tools/resample.py against known answers: which settings it lets change and how it reads their
values (parse_settings), and what a resampled run folder holds (resample): the run's own samples
when nothing changes, the new setting where one does, the trained run's loss, step and provenance,
its wall time plus the sampling's. The runs are the session's tiny runs (tests/conftest.py)."""
import json
import os
import shutil
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import resample  # noqa: E402


def test_resample_parse_settings_reads_each_value_with_the_scripts_own_parser():
    import dit
    import mar
    assert resample.parse_settings(dit, ["sample_steps=50"]) == {"sample_steps": 50}
    assert resample.parse_settings(dit, ["sample-steps=3"]) == {"sample_steps": 3}   # flag's name
    assert resample.parse_settings(mar, ["temperature=0.5", "diffusion_steps=7"]) == {
        "temperature": 0.5, "diffusion_steps": 7}
    assert resample.parse_settings(mar, []) == {}
    with pytest.raises(SystemExit) as refused:
        resample.parse_settings(dit, ["width=8"])
    assert str(refused.value.code) == ("error: --set 'width=8': dit samples with sample_steps; "
                                       "'width' is not one of them")
    with pytest.raises(SystemExit, match="'sample_steps=0': --sample-steps must be a positive"):
        resample.parse_settings(dit, ["sample_steps=0"])


def test_resample_keeps_the_runs_step_loss_and_provenance_and_adds_the_sampling_time(tmp_path,
                                                                                    tiny_run,
                                                                                    monkeypatch):
    for picture in ("save_samples_png", "save_curves_png"):          # not read here: not drawn
        monkeypatch.setattr(resample.runs, picture, lambda *args, **kwargs: None)
    run = tmp_path / "run"                          # the session's tiny run (4 steps, evaluated
    shutil.copytree(tiny_run("dit.py"), run)        # at 4), as if its 4 steps had taken 1000 s
    last = {**json.loads((run / "metrics.jsonl").read_text().splitlines()[-1]), "seconds": 1000.0}
    (run / "metrics.jsonl").write_text(json.dumps(last) + "\n")
    same = tmp_path / "same"
    metrics = resample.resample(str(run), str(same), [])
    assert (np.load(same / "samples.npz")["images"] == np.load(run / "samples.npz")["images"]).all()
    [line] = [json.loads(x) for x in (same / "metrics.jsonl").read_text().splitlines()]
    assert line == metrics and line["step"] == 4 and line["loss"] == last["loss"]
    assert line["acc"] == last["acc"]                             # the same samples, judged alike
    assert 1000 <= line["seconds"] < 1060                    # the run's time, then the sampling's
    changed = tmp_path / "changed"
    resample.resample(str(run), str(changed), ["sample_steps=3"])
    config = json.loads((changed / "config.json").read_text())
    trained = json.loads((run / "config.json").read_text())
    assert config["sample_steps"] == 3 and trained["sample_steps"] != 3
    assert {k: v for k, v in config.items() if k not in ("sample_steps", "out", "resampled_from",
                                                         "resample_provenance", "clock")} == \
        {k: v for k, v in trained.items() if k not in ("sample_steps", "out", "clock")}
    assert config["out"] == str(changed) and config["resampled_from"] == str(run)
    assert config["resample_provenance"]["commit"] == trained["provenance"]["commit"]
    assert (np.load(changed / "samples.npz")["images"] != np.load(run / "samples.npz")["images"]
            ).any()
    with pytest.raises(SystemExit, match="already holds metrics.jsonl; choose a new --out"):
        resample.resample(str(run), str(changed), [])
    unrecorded = tmp_path / "unrecorded"                  # a checkpoint whose evaluation was lost
    shutil.copytree(run, unrecorded)
    (unrecorded / "metrics.jsonl").write_text("")
    line = resample.resample(str(unrecorded), str(tmp_path / "from-unrecorded"), [])
    assert np.isnan(line["loss"]) and line["seconds"] < 60


@pytest.mark.parametrize("script, change",
                         [("givt.py", "mixture_temperature=0"),
                          ("jepa_maskgit.py", "sample_steps=3"), ("mar.py", "diffusion_steps=3"),
                          ("ar.py", "temperature=0")])
def test_resample_redraws_a_run_and_changes_only_what_it_is_told(tmp_path, tiny_run, capsys, script,
                                                                  change):
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


@pytest.mark.parametrize("name", ["shapes3d", "clips"])
def test_resample_reads_and_prints_a_run_of_any_world_with_that_worlds_codes(
        name, tmp_path, monkeypatch, capsys):
    """A world's run is read with its own codes and table rows (Shapes2D's eight would be a
    KeyError on clips and the wrong table on shapes3d). Small readers keep it cheap; their
    caches are keyed by those sizes, so a real run never reads them."""
    import scripts
    import worlds
    world = worlds.world(name)
    monkeypatch.setattr(world, "PROBE_PER_CODE", 3)
    monkeypatch.setattr(world, "HELD_OUT_PER_CODE", 1)
    run = tmp_path / "run"
    scripts.main("givt.py", *scripts.ONCE, "--world", name, "--samples-per-comp", "1",
                 "--train-per-comp", "2", "--out", run)
    capsys.readouterr()
    resample.main([str(run), "--out", str(tmp_path / "again"), "--set", "temperature=0.5"])
    printed = capsys.readouterr().out
    for group in world.GROUPS:                        # its rows: group0 ... level2, day-left ...
        assert f"\n{group}" in printed or printed.startswith(group), (group, printed)
    kept = np.load(tmp_path / "again" / "samples.npz")
    assert {world.bits_to_code(f) for f in kept["factors"]} == set(world.COMPOSITIONS)
    [line] = [json.loads(x) for x in (tmp_path / "again" / "metrics.jsonl").read_text()
              .splitlines()]
    assert set(line["acc"]) == set(world.COMPOSITIONS)


def test_resample_reads_the_loss_and_time_of_the_checkpoints_own_step_and_samples_on_the_device(
        tmp_path, monkeypatch):
    """Stand-ins for the checkpoint (at step 4) and the evaluation: a run whose metrics go on past
    the checkpoint (steps 2, 4, 6) resamples with the loss and wall time recorded at step 4, its
    network moved to the device asked, into the new folder, with the sampling settings changed."""
    import types
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"provenance": {"commit": "trained"}}))
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({"step": step, "loss": loss, "seconds": seconds}) + "\n"
        for step, loss, seconds in ((2, 3.0, 20.0), (4, 2.0, 40.0), (6, 1.0, 60.0))))

    class Network:
        def to(self, device):
            return ("network on", device)
    module = types.SimpleNamespace(NAME="stand-in", SAMPLING=("temperature",), draw="its draw",
                                   parse=lambda argv: (None, types.SimpleNamespace(
                                       temperature=float(argv[1]))))
    trained = {"seed": 0, "temperature": 1.0}
    monkeypatch.setattr(resample, "load_trained",
                        lambda run: (4, trained, module, Network(), "codes"))
    monkeypatch.setattr(resample.runs, "check_values", lambda parser, args: None)
    monkeypatch.setattr(resample.runs, "provenance", lambda device: {"commit": "now", "on": device})
    clocks, drawn = [], []
    monkeypatch.setattr(resample.runs, "start_clock",
                        lambda config, before=0.0: clocks.append(before))
    monkeypatch.setattr(resample.runs, "draw_and_read",
                        lambda *args: drawn.append(args) or "metrics")
    out = tmp_path / "out"
    assert resample.resample(str(run), str(out), ["temperature=0.5"], device="meta") == "metrics"
    assert clocks == [40.0]
    [(draw, model, tokenizer, config, step, loss)] = drawn
    assert (draw, model, tokenizer, step, loss) == ("its draw", ("network on", "meta"), "codes",
                                                    4, 2.0)
    assert config == json.loads((out / "config.json").read_text())
    assert config["temperature"] == 0.5 and config["out"] == str(out)
    assert config["device"] == "meta" and config["resampled_from"] == str(run)
    assert config["provenance"] == {"commit": "trained"}
    assert config["resample_provenance"] == {"commit": "now", "on": "meta"}
