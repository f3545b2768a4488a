"""tools/collect.py and its parts (tools/collect_settings.py, collect_tables.py, collect_worlds.py,
collect_pictures.py) against known answers: a results folder of hand-made runs (their configs,
metrics and samples written here, every number chosen so that the table's cells can be worked out
by hand), and each function on its own: the rows it reads, how it groups them (by setting, seeds in
order), how it averages (by composition and split, over seeds, over the numbers asked) and how it
rounds. The folder holds two seeds of one setting, one of another, one run of another model and
one not yet evaluated (no samples.npz); objects.py's runs, another table, are a second folder."""
import json
import os
import sys

import numpy as np
import pytest

import data

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import collect  # noqa: E402
import collect_pictures  # noqa: E402
import collect_settings  # noqa: E402
import collect_tables  # noqa: E402
import collect_worlds  # noqa: E402

COMMIT = {"aaaa": "a" * 40, "bbbb": "b" * 40}


def provenance(commit):
    return {"commit": COMMIT[commit], "uncommitted_changes": False}


def shapes2d(step, composed, seconds, malformed=0.0, fidelity=0.25, probe=0.75, level2=None):
    """A metrics line: composed for every code but 111, level2 for 111 (and the split)."""
    level2 = composed if level2 is None else level2
    acc = {c: level2 if c == "111" else composed for c in data.COMPOSITIONS}
    return {"step": step, "loss": 1.0, "seconds": seconds, "acc": acc,
            "fidelity": {c: fidelity for c in data.COMPOSITIONS},
            "probe_acc": {c: probe for c in data.COMPOSITIONS},
            "seen": composed, "level1": composed, "level2": level2, "malformed": malformed}


def write_run(folder, config, history, **samples):
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
        f.writelines(json.dumps(m) + "\n" for m in history)
    if samples:
        np.savez_compressed(os.path.join(folder, "samples.npz"), **samples)


SHAPES = {"images": np.zeros((8, 32, 32, 3), np.uint8),
          "factors": np.array([data.code_to_bits(c) for c in data.COMPOSITIONS])}
RUNS = {      # name: (config, history); dit's two seeds reach level-2 50% at steps 4 and 2
    "dit": ({"model": "dit", "seed": 0, "provenance": provenance("aaaa")},
            [shapes2d(2, 0.1, 60, level2=0.3), shapes2d(4, 0.5, 144, 0.1, level2=0.6)]),
    "dit-seed1": ({"model": "dit", "seed": 1, "provenance": provenance("bbbb")},
                  [shapes2d(2, 0.2, 30, level2=0.5),
                   shapes2d(4, 0.7, 90, 0.3, fidelity=0.45, level2=0.8)]),
    "dit-dropout": ({"model": "dit", "seed": 0, "cond": "dropout"},          # no provenance
                    [shapes2d(4, 0.4, 100, level2=0.95)]),
    "maskgit": ({"model": "maskgit", "seed": 0, "provenance": provenance("aaaa")},
                [shapes2d(4, 0.9, 200, level2=0.1)]),
}


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    """The results folder (runs kept by collect.add), rebuilt once: (folder, groups, table.md)."""
    made = tmp_path_factory.mktemp("made")
    for name, (config, history) in RUNS.items():
        write_run(made / name, config, history, **SHAPES)
    write_run(made / "dit-early", {"model": "dit", "seed": 2}, [])        # not evaluated yet
    folder = tmp_path_factory.mktemp("results") / "ladder"
    collect.add(str(folder), [str(made / name) for name in RUNS])
    os.makedirs(folder / "runs" / "dit-early")
    for name in ("config.json", "metrics.jsonl"):
        os.replace(made / "dit-early" / name, folder / "runs" / "dit-early" / name)
    groups, written = collect.write(str(folder))
    return folder, groups, written


def rows(written, first):
    """The cells of each table row under the heading that starts with `first`: {name: [cells]}."""
    section = written.split(first, 1)[1].split("\n## ", 1)[0]
    found = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            found.setdefault(cells[0].strip("`"), []).append(cells[1:])
    return found


# --------------------------------------------------------------------- the folder and its groups
def test_collect_add_keeps_each_runs_three_files_and_refuses_an_unfinished_one(tmp_path):
    config, history = RUNS["dit"]
    write_run(tmp_path / "made" / "dit", config, history, **SHAPES)
    (tmp_path / "made" / "dit" / "ckpt.pt").write_bytes(b"not kept")
    collect.add(str(tmp_path / "kept"), [str(tmp_path / "made" / "dit") + "/"])
    assert sorted(os.listdir(tmp_path / "kept" / "runs" / "dit")) == [
        "config.json", "metrics.jsonl", "samples.npz"]
    write_run(tmp_path / "half", config, history)                         # not evaluated yet
    with pytest.raises(SystemExit, match="half is not a finished run \\(no samples.npz\\)"):
        collect.add(str(tmp_path / "kept"), [str(tmp_path / "half")])


def test_collect_add_keeps_every_run_named_however_the_flag_is_repeated(monkeypatch):
    kept = []
    monkeypatch.setattr(collect, "add", lambda folder, runs: kept.append(runs))
    monkeypatch.setattr(collect, "write", lambda folder, clock: ({}, ""))
    collect.main(["results/x", "--add", "a", "b", "--add", "c"])
    assert kept == [["a", "b", "c"]]


def test_collect_load_groups_runs_by_setting_in_ladder_order_seeds_in_order(ladder):
    folder, groups, _ = ladder
    assert {name: [member[0] for member in members] for name, members in groups.items()} == {
        "maskgit.py": ["maskgit"], "dit.py": ["dit", "dit-seed1"],
        "dit.py --cond dropout": ["dit-dropout"]}                    # dit-early: not evaluated
    assert list(groups) == ["maskgit.py", "dit.py", "dit.py --cond dropout"]
    _, config, history = groups["dit.py"][1]
    assert config["seed"] == 1 and [m["step"] for m in history] == [2, 4]
    assert all(np.isnan(m["seconds"]) for m in history)          # shared the machine: steps only
    clocked = collect.load(str(folder), "dit")                       # dit had the machine alone
    assert [m["seconds"] for m in clocked["dit.py"][1][2]] == [60, 144]
    assert np.isnan(clocked["maskgit.py"][0][2][0]["seconds"])     # another model: not clocked
    with pytest.raises(SystemExit, match="--clock nobody: no run of that name"):
        collect.load(str(folder), "nobody")


def test_collect_load_leaves_out_a_run_not_yet_evaluated(tmp_path):
    write_run(tmp_path / "runs" / "dit", *RUNS["dit"], **SHAPES)
    write_run(tmp_path / "runs" / "dit-seed1", *RUNS["dit-seed1"])         # no samples.npz yet
    groups = collect.load(str(tmp_path), None)
    assert {name: [member[0] for member in members] for name, members in groups.items()} == {
        "dit.py": ["dit"]}


def test_collect_groups_and_readers_on_their_own():
    history = RUNS["dit"][1]
    assert collect_pictures.reading_at(history, "level2", 4) == 0.6
    assert collect_pictures.reading_at(history, "seen", 2) == 0.1
    members = [("a", {"seed": 0, "provenance": provenance("aaaa")}, []),
               ("b", {"seed": 1, "provenance": provenance("bbbb")}, []),
               ("c", {"seed": 2, "provenance": provenance("bbbb")}, [])]
    assert collect_settings.seeds_of(members) == "0, 1, 2"
    assert collect_settings.commits(members) == "aaaaaaa (seed 0), bbbbbbb (seeds 1, 2)"
    assert collect_settings.commits(members[1:]) == "bbbbbbb"
    assert collect.of_objects({"o": [("o", {"model": "objects"}, [])]})
    assert not collect.of_objects({"o": [("o", {"model": "objects"}, [])],
                                   "d": [("d", {"model": "dit"}, [])]})


def test_collect_names_a_setting_by_its_flags_away_from_the_defaults():
    config = {**collect_settings.defaults("maskgit"), "model": "maskgit", "seed": 0,
              "out": "runs/x"}
    assert collect_settings.setting(config) == "maskgit.py"
    assert (collect_settings.setting({**config, "lr": 3e-4, "label_smoothing": 0.1})
            == "maskgit.py --label-smoothing 0.1 --lr 0.0003")
    new = {"model": "dit", "cond": "continuous", "time_dist": "logit-normal"}
    assert collect_settings.setting(new) == "dit.py"
    assert collect_settings.setting({**new, "time_dist": "uniform"}) == "dit.py --time-dist uniform"
    assert collect_settings.setting({**new, "resampled_from": "runs/dit"}) == "dit.py (resampled)"
    # a model's own knobs and a longer run are settings of their own, not more seeds of the default
    # a flag whose default follows another's is named where the command needs it: ar.py's tokenizer
    ar = {"model": "ar", "head": "gmm", "tokenizer": "pixels"}
    assert collect_settings.setting(ar) == "ar.py --head gmm"
    assert (collect_settings.setting({**ar, "tokenizer": "codebook"})
            == "ar.py --head gmm --tokenizer codebook")
    assert collect_settings.setting({**ar, "head": "categorical",
                                     "tokenizer": "codebook"}) == "ar.py"
    givt = {**collect_settings.defaults("givt"), "model": "givt", "seed": 3}
    assert collect_settings.setting(givt) == "givt.py"
    assert collect_settings.setting({**givt, "components": 16, "temperature": 0.0,
                                     "steps": 5000}) == \
        "givt.py --components 16 --steps 5000 --temperature 0.0"
    assert collect_settings.setting({**givt, "mask_schedule": "linear"}) == \
        "givt.py --mask-schedule linear"
    jepa = {**collect_settings.defaults("jepa_maskgit"), "model": "jepa_maskgit", "seed": 0}
    assert collect_settings.setting({**jepa, "jepa_layers": [1, 3]}) == \
        "jepa_maskgit.py --jepa-layers 1,3"
    assert collect_settings.setting({"model": "maskgit", "factored_head": True}) == \
        "maskgit.py --factored-head"


def test_collect_defaults_are_the_scripts_own_flags_but_seed_folder_and_device():
    import dit
    given = collect_settings.defaults("dit", ["--cond", "discrete"])
    assert given["cond"] == "discrete" and given["lr"] == dit.DEFAULTS["lr"] != 1e-3
    assert not {"seed", "out", "resume", "device", "keep_checkpoints"} & set(given)


def test_collect_reads_a_runs_commit_from_its_provenance():
    clean = {"commit": "0fc5ff413793fdb4eb18be1b64c0fd2222720d84", "uncommitted_changes": False}
    assert collect_settings.commit({"provenance": clean}) == "0fc5ff4"
    assert (collect_settings.commit({"provenance": {**clean, "uncommitted_changes": True}})
            == "0fc5ff4 (uncommitted changes)")
    assert collect_settings.commit({}) == collect_settings.NOT_RECORDED   # made by other code


# ------------------------------------------------------------------------- averages and rounding
def test_collect_mean_std_is_over_seeds_with_the_std_divided_by_n_and_rounds_as_asked():
    assert collect_tables.mean_std([0.1, 0.2, 0.6]) == "30.0 ± 21.6"           # sqrt(1400 / 3)
    assert collect_tables.mean_std([0.5, 0.7]) == "60.0 ± 10.0"                # not ± 14.1 (n - 1)
    assert collect_tables.mean_std([0.123]) == "12.3"                          # one seed: no spread
    assert collect_tables.mean_std([0.5, None, float("nan")]) == "50.0"        # missing left out
    assert collect_tables.mean_std([None]) == "-"
    assert collect_tables.mean_std([0.5, 1.5], 1) == "1.0 ± 0.5"
    assert collect_tables.mean_std([0.854, 0.8], 100, 0) == "83 ± 3"
    assert collect_tables.minutes(2.26) == "2.3 min"
    assert collect_tables.minutes(float("nan")) == "-"


def test_collect_time_to_composition_is_the_first_evaluation_at_or_above_the_mark():
    history = [{"step": 10, "level2": 0.2, "seconds": 60}, {"step": 20, "level2": 0.5,
                                                            "seconds": 120},
               {"step": 40, "level2": 0.95, "seconds": 300}]
    assert collect_tables.first_reaching(history, 0.5) == (20, 2.0)                # 0.5 reaches 50%
    assert collect_tables.first_reaching(history, 0.9) == (40, 5.0)
    assert collect_tables.first_reaching(history, 0.99) is None
    later = [{"step": 40, "level2": 0.6, "seconds": 240}]
    assert collect_tables.mean_reaching([history, later], 0.5) == "30 (3.0 min), 2 of 2 seeds"
    assert collect_tables.mean_reaching([history, later], 0.9) == "40 (5.0 min), 1 of 2 seeds"
    assert collect_tables.mean_reaching([history, later], 0.99) == "not reached"
    untimed = [{**m, "seconds": float("nan")} for m in later]
    assert collect_tables.mean_reaching([history, untimed], 0.5) == "30, 2 of 2 seeds"


# ------------------------------------------------------------------------------- the table
def test_collect_table_averages_each_setting_over_its_seeds_by_split_and_composition(ladder):
    folder, _, written = ladder
    assert written == (folder / "table.md").read_text()
    assert written.startswith("Rebuilt by `python tools/collect.py results/ladder` from the kept")
    readings = rows(written, "## The three readings")
    # dit's seeds: composed 0.5 and 0.7 (111: 0.6, 0.8), fidelity 0.25 and 0.45, probe 0.75 both
    (dit,), (dropout,), (maskgit,) = (readings[n] for n in ("dit.py", "dit.py --cond dropout",
                                                            "maskgit.py"))
    assert dit[:6] == ["0, 1", "4", "60.0 ± 10.0 / 35.0 ± 10.0 / 75.0 ± 0.0",
                       "60.0 ± 10.0 / 35.0 ± 10.0 / 75.0 ± 0.0",
                       "70.0 ± 10.0 / 35.0 ± 10.0 / 75.0 ± 0.0", "20.0 ± 10.0"]
    assert dit[6:14] == ["60.0 ± 10.0"] * 7 + ["70.0 ± 10.0"]           # 000 ... 110, then 111
    assert dit[14:] == [collect_tables.PAPER["dit.py"], "aaaaaaa (seed 0), bbbbbbb (seed 1)"]
    assert dropout[:6] == ["0", "4", "40.0 / 25.0 / 75.0", "40.0 / 25.0 / 75.0",
                           "95.0 / 25.0 / 75.0", "0.0"]
    assert dropout[-1] == collect_settings.NOT_RECORDED and maskgit[-1] == "aaaaaaa"
    assert list(readings) == ["maskgit.py", "dit.py", "dit.py --cond dropout"]


def test_collect_time_to_composition_per_seed_and_their_mean(ladder):
    folder, _, written = ladder
    timing = rows(written, "## Time to composition")["dit.py"]
    assert timing == [["0", "4", "not by step 4", "60.0", "[samples](runs/dit/samples.png)",
                       "aaaaaaa"],
                      ["1", "2", "not by step 4", "80.0",
                       "[samples](runs/dit-seed1/samples.png)", "bbbbbbb"],
                      ["mean", "3, 2 of 2 seeds", "not reached", "70.0 ± 10.0", "",
                       "aaaaaaa (seed 0), bbbbbbb (seed 1)"]]
    assert rows(written, "## Time to composition")["dit.py --cond dropout"][0][1:3] == ["4", "4"]
    clocked = collect.text(collect.load(str(folder), "dit"), "python tools/collect.py x")
    timing = rows(clocked, "## Time to composition")["dit.py"]    # dit alone: 144 s, 30 s at 2
    assert [row[1] for row in timing] == ["4 (2.4 min)", "2 (1.0 min)", "3 (1.7 min), 2 of 2 seeds"]


def test_collect_write_names_its_command_draws_each_grid_and_the_curves(ladder, tmp_path):
    folder, groups, _ = ladder
    for name in RUNS:
        assert (folder / "runs" / name / "samples.png").stat().st_size > 3000
    assert (folder / "novel.png").stat().st_size > 3000
    _, written = collect.write(str(folder), clock="dit")
    assert written.startswith("Rebuilt by `python tools/collect.py results/ladder --clock dit`")


def test_collect_time_to_composition_has_a_mean_row_only_over_several_seeds(ladder):
    _, _, written = ladder
    timing = rows(written, "## Time to composition")
    assert [row[0] for row in timing["dit.py"]] == ["0", "1", "mean"]
    assert [row[0] for row in timing["dit.py --cond dropout"]] == ["0"]          # one seed: no mean


def test_collect_write_titles_each_grid_by_its_last_step_keeps_a_given_command_and_an_untimed_step(
        tmp_path, monkeypatch):
    """Each run's grid is titled by its name, setting and the step of its last evaluation; a
    command given (tools/reproduce.py gives its own) heads table.md in place of the one collect
    would write; and where the clocked run recorded no time at a step, no run of its model has
    one there (not 0 s)."""
    untimed = [{k: v for k, v in m.items() if k != "seconds" or m["step"] != 2}
               for m in RUNS["dit"][1]]
    write_run(tmp_path / "runs" / "dit", RUNS["dit"][0], untimed, **SHAPES)
    write_run(tmp_path / "runs" / "dit-seed1", *RUNS["dit-seed1"], **SHAPES)
    titles = {}
    monkeypatch.setattr(collect.runs, "save_samples_png", lambda path, images, factors, title:
                        titles.update({os.path.basename(os.path.dirname(path)): title}))
    monkeypatch.setattr(collect, "plot_curves", lambda *args, **kwargs: None)
    _, written = collect.write(str(tmp_path), command="python tools/reproduce.py x")
    assert titles == {"dit": "dit: dit.py, step 4", "dit-seed1": "dit-seed1: dit.py, step 4"}
    assert written.startswith("Rebuilt by `python tools/reproduce.py x` from the kept runs")
    clocked = collect.load(str(tmp_path), "dit")["dit.py"]
    seconds = [[m["seconds"] for m in history] for _, _, history in clocked]   # steps 2 and 4
    assert all(np.isnan(at_2) and at_4 == 144 for at_2, at_4 in seconds) and len(seconds) == 2


class Axes:
    """A stand-in for matplotlib's axes and figure: records ax.plot, accepts the rest."""

    def __init__(self, lines=None):
        self.lines = [] if lines is None else lines

    def plot(self, steps, values, style, **kwargs):
        self.lines.append((list(steps), [round(v, 6) for v in values], style, kwargs.get("label")))

    def __getattr__(self, name):
        return Axes(self.lines)

    def __call__(self, *args, **kwargs):
        return Axes(self.lines)


def test_collect_draws_each_setting_as_the_mean_over_seeds_at_the_steps_they_share(ladder,
                                                                                    monkeypatch):
    _, groups, _ = ladder
    import matplotlib.pyplot as plt
    axes = Axes()
    monkeypatch.setattr(collect_pictures.runs, "pyplot", lambda: type("plt", (), {
        "rcParams": plt.rcParams, "subplots": staticmethod(lambda *a, **k: (Axes(), [[axes]])),
        "close": staticmethod(lambda fig: None)}))
    shorter = {"dit.py": [*groups["dit.py"][:1],
                          ("x", groups["dit.py"][1][1], groups["dit.py"][1][2][1:])]}
    collect_pictures.plot_curves("unused.png", {**groups, **shorter})
    assert axes.lines == [
        ([4], [10.0], "-", "maskgit.py (1 seed)"), ([4], [90.0], "--", None),
        ([4], [70.0], "-", "dit.py (2 seeds)"), ([4], [60.0], "--", None),   # step 2: one seed
        ([4], [95.0], "-", "dit.py --cond dropout (1 seed)"), ([4], [40.0], "--", None)]


def test_collect_summary_gives_the_front_pages_rows_the_mean_of_111_over_seeds(ladder):
    _, groups, _ = ladder
    paper = {name: collect_tables.FRONT_PAGE[name][2] for name in ("maskgit.py", "dit.py")}
    assert collect_tables.summary(groups) == [     # seen, 111 composed, 111 probe: seed means
        "| MaskGIT (`maskgit.py`) | categorical: cross-entropy over codebook ids | 90.0 | 10.0 | "
        f"75.0 | {paper['maskgit.py']} |",
        "| DiT (`dit.py`) | continuous: diffusion of all patches | 60.0 | 70.0 | 75.0 | "
        f"{paper['dit.py']} |"]


# ------------------------------------------------------------------------- objects.py's table
def objects_metrics(step, exact, found, extra, locality, numbers):
    return {"step": step, "loss": 1.0, "seconds": 10.0,
            "exact": {str(n): exact(n) for n in numbers},
            "found": {str(n): found(n) for n in numbers},
            "extra": {str(n): extra(n) for n in numbers},
            "locality": {t: locality for t in ("0.2", "0.5", "0.8")},
            "locality_within_reach": {t: locality + 0.1 for t in ("0.2", "0.5", "0.8")},
            "pixel_locality": {t: locality - 0.1 for t in ("0.2", "0.5", "0.8")},
            "trained": 0.5, "beyond": 0.25, "found_trained": 0.9, "found_beyond": 0.8}


def test_collect_objects_table_averages_1_to_3_and_the_numbers_every_run_asked_beyond(tmp_path):
    """Seed 0 asked 0-10, seed 1 0-8: the spans read 1-3 and 4-8 (not 4-10), each number asked
    equally often, so the mean of its shares; the most asked is 8."""
    samples = {"images": np.zeros((2, 32, 32, 3), np.uint8), "counts": np.array([1, 2]),
               "points": np.full((2, 2, 2), 8.0)}
    write_run(tmp_path / "runs" / "objects", {"model": "objects", "seed": 0},
              [objects_metrics(4, lambda n: n / 20, lambda n: 1 - n / 40, lambda n: n / 4, 0.9,
                               range(11))], **samples)
    write_run(tmp_path / "runs" / "objects-seed1", {"model": "objects", "seed": 1},
              [objects_metrics(4, lambda n: n / 10, lambda n: 1 - n / 20, lambda n: n / 2, 0.8,
                               range(9))], **samples)
    groups, written = collect.write(str(tmp_path))
    assert collect.of_objects(groups)
    head = next(line for line in written.splitlines() if line.startswith("| setting"))
    assert "| 1-3 exact / found | 4-8 exact / found | 8 asked: found (%) / extra |" in head
    (cells,) = rows(written, "## Drawn exactly")["objects.py"]
    assert cells[:2] == ["0, 1", "4"]
    assert cells[2:13] == ["0.0 ± 0.0", "7.5 ± 2.5", "15.0 ± 5.0", "22.5 ± 7.5", "30.0 ± 10.0",
                           "37.5 ± 12.5", "45.0 ± 15.0", "52.5 ± 17.5", "60.0 ± 20.0",
                           "45.0", "50.0"]                               # 9 and 10: seed 0 alone
    assert cells[13:16] == ["15.0 ± 5.0 / 92.5 ± 2.5", "45.0 ± 15.0 / 77.5 ± 7.5",
                            "70.0 ± 10.0 / 3.0 ± 1.0"]
    assert cells[16:19] == [" / ".join(["85 ± 5"] * 3), " / ".join(["95 ± 5"] * 3),
                            " / ".join(["75 ± 5"] * 3)]
    assert cells[19:] == [collect_tables.PAPER["objects.py"], collect_settings.NOT_RECORDED]


# ------------------------------------------------------------------ the time course (long runs)
def course_run(seed, level2, probe, schedule="cosine"):
    """A long run at steps 2, 4, 8: level-2 composed and 111's probe given per step."""
    history = [shapes2d(step, 0.5, 10.0 * step, level2=l2, probe=p)
               for step, l2, p in zip((2, 4, 8), level2, probe)]
    return {"model": "maskgit", "seed": seed, "lr_schedule": schedule, "steps": 10000}, history


def test_collect_time_course_reads_each_seeds_peak_and_end_of_the_recipes_runs(tmp_path,
                                                                               monkeypatch):
    """The long runs of the long-budget recipe (not the constant-rate control, not a short run of
    the recipe), each seed's peak (its first step at the highest value) and end, and a panel per
    model with a thin line per seed and the mean over seeds in bold."""
    folder = tmp_path / "long-runs"
    kept = {"maskgit": course_run(0, (0.2, 0.6, 0.1), (0.5, 0.5, 0.3)),
            "maskgit-seed1": course_run(1, (0.4, 0.4, 0.3), (0.1, 0.9, 0.7)),
            "maskgit-constant": course_run(0, (0.9, 0.9, 0.9), (0.9, 0.9, 0.9), "constant"),
            "dit-short": ({"model": "dit", "seed": 0, "lr_schedule": "cosine", "steps": 2000},
                          course_run(0, (0.9, 0.9, 0.9), (0.9, 0.9, 0.9))[1])}
    for name, (config, history) in kept.items():
        write_run(folder / "runs" / name, config, history, **SHAPES)
    groups, written = collect.write(str(folder))
    section = written.split("## The time course", 1)[1]
    assert rows(section, ": each seed's")["maskgit.py --lr-schedule cosine --steps 10000"] == [
        ["0", "60.0 (4)", "10.0", "50.0 (2)", "30.0", "not recorded"],
        ["1", "40.0 (2)", "30.0", "90.0 (4)", "70.0", "not recorded"]]
    assert "constant" not in section and "dit.py" not in section
    assert (folder / "time-course.png").exists()
    panels = [Axes(), Axes()]
    import matplotlib.pyplot as plt
    monkeypatch.setattr(collect_pictures.runs, "pyplot", lambda: type("plt", (), {
        "rcParams": plt.rcParams, "close": staticmethod(lambda fig: None),
        "subplots": staticmethod(lambda *a, **k: (Axes(), [[panels[0]], [panels[1]]]))}))
    collect_pictures.plot_time_course("unused.png", collect_tables.on_course(groups))
    assert panels[0].lines == [([2, 4, 8], [20.0, 60.0, 10.0], "-", None),
                               ([2, 4, 8], [40.0, 40.0, 30.0], "-", None),
                               ([2, 4, 8], [30.0, 50.0, 20.0], "-", "mean of 2 seeds")]
    assert panels[1].lines[-1] == ([2, 4, 8], [30.0, 70.0, 50.0], "-", "mean of 2 seeds")


def test_collect_a_world_of_many_compositions_tables_each_group_and_its_commonest_substitution(
        tmp_path):
    from worlds import shapes3d
    codes = shapes3d.COMPOSITIONS
    for seed, level2 in ((0, 0.5), (1, 0.25)):
        acc = {c: level2 if c in shapes3d.LEVEL2 else 1.0 for c in codes}
        line = {"step": 8, "loss": 1.0, "seconds": 1.0, "acc": acc,
                "fidelity": acc, "probe_acc": {c: 0.75 for c in codes}, "seen": 1.0,
                "level1": 1.0, "level2": level2, "malformed": 0.0,
                "substitution": {"726": {"color=blue": 3, "shape=cylinder": 1 + seed},
                                 "927": {"shape=cylinder": 2}}}
        write_run(tmp_path / "kept" / "runs" / f"maskgit-seed{seed}",
                  {"model": "maskgit", "seed": seed, "world": "shapes3d",
                   "provenance": provenance("aaaa")}, [line],
                  images=np.zeros((240, 32, 32, 3), np.uint8),
                  factors=np.array([shapes3d.code_to_bits(c) for c in codes]))
    groups, written = collect.write(str(tmp_path / "kept"))
    assert collect.world_of(groups) is shapes3d
    rows = [row for row in written.splitlines() if row.startswith("| `maskgit.py --world")]
    assert [row.split(" | ")[3] for row in rows] == ["group0", "group1", "level1", "level2"]
    level2 = rows[-1].split(" | ")
    assert level2[5:9] == ["37.5 ± 12.5", "50.0 / 25.0", "75.0 ± 0.0",
                           "shape=cylinder (7)"]           # over both seeds: 1 + 2 + 2 + 2 > 3 + 3
    assert rows[0].split(" | ")[8] == "none (0)"
    assert (tmp_path / "kept" / "real.png").exists()
    assert (tmp_path / "kept" / "runs" / "maskgit-seed0" / "samples.png").exists()


def test_collect_a_seen_count_sweep_tables_each_n_and_draws_it(tmp_path):
    """Two seeds trained on 12 seen codes beside one on all 190 (and a model trained on all 190
    only, no sweep): the trained codes, the seen ones not trained, level-1 and level-2 per N, and
    the reach read from reach.json."""
    from worlds import shapes3d
    codes, trained = shapes3d.COMPOSITIONS, shapes3d.narrowed(12).SEEN

    def line(level2):
        acc = {c: level2 if c in shapes3d.LEVEL2 else 1.0 if c in trained else 0.5
               for c in codes}
        return {"step": 8, "loss": 1.0, "seconds": 1.0, "acc": acc, "fidelity": acc,
                "probe_acc": {c: 0.75 for c in codes}, "seen": 0.5, "level1": 0.2,
                "level2": level2, "malformed": 0.0}
    samples = dict(images=np.zeros((240, 32, 32, 3), np.uint8),
                   factors=np.array([shapes3d.code_to_bits(c) for c in codes]))
    recipe = {"model": "maskgit", "world": "shapes3d", "lr_schedule": "cosine"}
    for seed, level2 in ((0, 0.0), (1, 0.5)):
        write_run(tmp_path / "kept" / "runs" / f"maskgit-seen12-seed{seed}",
                  {**recipe, "seed": seed, "seen_count": 12, "train_per_comp": 1583},
                  [line(level2)], **samples)              # --seen-count sizes the training set
    write_run(tmp_path / "kept" / "runs" / "maskgit-seed0",
              {**recipe, "seed": 0, "train_per_comp": 100}, [line(1.0)], **samples)
    write_run(tmp_path / "kept" / "runs" / "dit-seed0", {**recipe, "model": "dit", "seed": 0},
              [line(1.0)], **samples)                       # one N only: not in the sweep
    with open(tmp_path / "kept" / "reach.json", "w") as f:
        json.dump({"12": {"level1": [0.1, 0.2], "level2": [0.3, 0.4]}}, f)
    groups, written = collect.write(str(tmp_path / "kept"))
    table = written.split("## How much diversity", 1)[1]
    cells = {row.split(" | ")[1]: row.split(" | ") for row in table.splitlines()
             if row.startswith("| maskgit")}
    assert not [row for row in table.splitlines() if row.startswith("| dit")]
    assert cells["12"][3:10] == ["100.0 ± 0.0", "50.0 ± 0.0", "20.0 ± 0.0", "25.0 ± 25.0",
                                 "0.0 / 50.0", "75.0 ± 0.0", "40.0% |"]
    assert cells["190"][3:5] == ["53.2", "-"]     # (12 x 100% + 178 x 50%) / 190, all trained
    assert not [row for row in written.split("## How much", 1)[0].splitlines()
                if "--seen-count" in row]         # a narrowed run has no row of the group table
    assert (tmp_path / "kept" / "diversity.png").exists()


def test_collect_draws_the_sweep_thin_per_seed_the_mean_bold_and_the_reach(monkeypatch):
    lines = []
    monkeypatch.setattr(collect_pictures.runs, "pyplot", lambda: type("plt", (), {
        "subplots": staticmethod(lambda *a, **k: (Axes(lines), [[Axes(lines), Axes(lines)]])),
        "close": staticmethod(lambda fig: None)}))
    reach = {"190": {"level1": [0.0, 0.05], "level2": [0.0, 0.1]},
             "12": {"level1": [0.1, 0.2], "level2": [0.3, 0.4]}}

    def final(level1, level2):
        return {"level1": level1, "level2": level2}
    collect_pictures.plot_seen_sweep("unused.png",
                                     {"maskgit": {12: [final(0.1, 0.0), final(0.3, 0.5)],
                                                  190: [final(0.9, 0.8)]}}, reach)
    assert lines == [
        ([12, 190], [0.0, 80.0], "-", None), ([12], [50.0], "-", None),        # each seed, thin
        ([12, 190], [25.0, 80.0], "-", "level-2"),                             # the mean, bold
        ([12, 190], [10.0, 90.0], "--", None), ([12], [30.0], "--", None),
        ([12, 190], [20.0, 90.0], "--", "level-1"),
        ([12, 190], [40.0, 10.0], "-", "level-2"), ([12, 190], [20.0, 5.0], "--", "level-1")]


def test_collect_shows_the_first_clips_of_each_novel_class_frame_by_frame(tmp_path):
    """A clip world's pictures: the first six clips asked for each novel class, split into their
    four frames; clips.gif plays the frames in turn, strip.png lays them out."""
    import types

    from PIL import Image
    world = types.SimpleNamespace(
        LEVEL1=("02", "10"), LEVEL2=(), bits_to_code=lambda bits: "".join(map(str, bits)),
        describe={"02": "day-right", "10": "night-left"}.get,
        frames_of=lambda x: np.asarray(x).reshape(len(x), 2, 16, 2, 16, 3).transpose(
            0, 1, 3, 2, 4, 5).reshape(len(x), 4, 16, 16, 3))
    factors = np.array([[0, 0], [0, 2], [0, 0]] + [[0, 2]] * 7 + [[1, 0]])
    images = np.arange(len(factors), dtype=np.uint8)[:, None, None, None] * np.ones(
        (1, 32, 32, 3), np.uint8)
    images[:, :16, 16:] += 30                                  # frame 2, top right
    images[:, 16:, :16] += 60                                  # frame 3, bottom left
    images[:, 16:, 16:] += 100                                 # frame 4, bottom right
    shown = collect_pictures.novel_clips(images, factors, world)
    assert [label for label, _ in shown] == ["day-right", "night-left"]
    assert shown[0][1][:, 0, 0, 0, 0].tolist() == [1, 3, 4, 5, 6, 7]        # asked, in order
    assert shown[0][1][:, 3, 0, 0, 0].tolist() == [101, 103, 104, 105, 106, 107]
    assert shown[1][1].shape == (1, 4, 16, 16, 3) and shown[1][1][0, 0, 0, 0, 0] == 10
    collect_pictures.save_clips(str(tmp_path), images, factors, world, "a run")
    assert Image.open(tmp_path / "clips.gif").n_frames == 4
    assert (tmp_path / "strip.png").exists()


def test_collect_a_clip_world_tables_each_novel_class_hit1_its_six_way_row_and_the_studys():
    """Two seeds of dit.py and one of givt.py in the clip world: a row per novel class (never a
    seen one), Hit@1 the mean over seeds of the share on the asked class, the six-way row the
    mean of each class's share, "hit, refused" the mean share that hits though refused, and the
    study's Hit@1 beside dit.py's only."""
    from worlds import clips

    def final(day_right_hit, refused=0.0):
        rows = {c: {d: float(c == d) for d in clips.COMPOSITIONS} for c in clips.COMPOSITIONS}
        rows["02"] = {d: 0.0 for d in clips.COMPOSITIONS}
        rows["02"].update({"02": day_right_hit, "00": 1 - day_right_hit})
        ones = {c: 1.0 for c in clips.COMPOSITIONS}
        return [{"step": 8, "acc": ones, "probe_acc": ones,
                 "cra": {"row": rows, "hit1": {c: r[c] for c, r in rows.items()},
                         "hit_refused": {c: refused * (c == "02") for c in rows}}}]
    dit, givt = {"model": "dit"}, {"model": "givt"}
    groups = {"dit.py --world clips": [("dit-seed0", {**dit, "seed": 0}, final(0.5, 0.25)),
                                       ("dit-seed1", {**dit, "seed": 1}, final(0.25, 0.125))],
              "givt.py --world clips": [("givt-seed0", {**givt, "seed": 0}, final(1.0))]}
    lines = collect_worlds.cra_table(groups, clips)
    rows = [line.split(" | ") for line in lines if line.startswith("| `")]
    assert [(r[0], r[2]) for r in rows] == [("| `dit.py --world clips`", "day-right"),
                                            ("| `dit.py --world clips`", "night-left"),
                                            ("| `givt.py --world clips`", "day-right"),
                                            ("| `givt.py --world clips`", "night-left")]
    header = next(line for line in lines if line.startswith("| setting"))
    day_left = header.split(" | ").index("day-left")
    assert rows[0][3:5] == ["37.5 ± 12.5", "50.0 / 25.0"]
    refused = header.split(" | ").index("hit, refused")
    assert rows[0][refused] == "18.8 ± 6.2" and rows[1][refused] == "0.0 ± 0.0"
    assert rows[0][day_left] == "62.5 ± 12.5" and rows[0][day_left + 2] == "37.5 ± 12.5"
    assert rows[0][-1] == "47 |" and rows[1][-1] == "43 |" and rows[2][-1] == " |"
    assert "chance 1/6 = 16.7%" in "\n".join(lines)
    table = collect_worlds.world_table(groups, "python tools/collect.py results/clips", clips, {})
    assert ("playing: [dit-seed0](runs/dit-seed0/clips.gif), [givt-seed0](runs/givt-seed0/clips"
            ".gif); still, frame by frame: [dit-seed0](runs/dit-seed0/strip.png)") in table
    assert "\n".join(lines) in table                      # the CRA table follows the group table


def test_collect_the_folders_strip_shows_each_settings_first_clip_of_each_novel_class(
        monkeypatch):
    """save_models_strip: one row per (run, novel class), in that order, the first clip asked for
    the class, labelled by run and class."""
    from worlds import clips
    drawn = {}
    monkeypatch.setattr(collect_pictures, "draw_strip",
                        lambda path, shown, labels, title: drawn.update(clips=shown, labels=labels))
    factors = np.array([clips.code_to_bits(c) for c in ("00", "02", "10", "02", "10")])
    images = np.arange(5, dtype=np.uint8)[:, None, None, None] * np.ones((1, 32, 32, 3), np.uint8)
    collect_pictures.save_models_strip("unused.png", [("maskgit", images, factors),
                                                      ("dit", images[::-1], factors[::-1])], clips)
    assert drawn["labels"] == ["maskgit: day-right", "maskgit: night-left", "dit: day-right",
                               "dit: night-left"]
    assert [int(c[0, 0, 0, 0]) for c in drawn["clips"]] == [1, 2, 3, 4]      # each run its own
    assert all(c.shape == (4, 16, 16, 3) for c in drawn["clips"])


class Said:
    """A stand-in for matplotlib's figure and axes: records every call, by name, with its
    arguments."""

    def __init__(self, log):
        self.log = log

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.log.append((name, args))


def test_collect_a_strip_lays_each_clip_in_a_row_its_frames_across_each_labelled_at_its_middle(
        monkeypatch):
    """Three clips of two 4 x 4 frames: one picture of 3 rows and 2 frames across (each frame
    where it was), each row's label at its middle (2, 6, 10), each frame named from 1 at its
    middle (2, 6)."""
    log = []
    monkeypatch.setattr(collect_pictures.runs, "pyplot", lambda: type("plt", (), {
        "subplots": staticmethod(lambda *a, **k: (Said(log), Said(log))),
        "close": staticmethod(lambda fig: None)}))
    clips = [np.full((2, 4, 4, 3), 10 * i, np.uint8) + np.arange(2, dtype=np.uint8)[:, None,
                                                                                     None, None]
             for i in range(3)]
    collect_pictures.draw_strip("strip.png", clips, ["a", "b", "c"], "a title")
    said = dict(log)
    picture = said["imshow"][0]
    assert picture.shape == (12, 8, 3)
    assert [[int(picture[4 * i, 4 * t, 0]) for t in range(2)] for i in range(3)] == [
        [0, 1], [10, 11], [20, 21]]
    assert said["set_yticks"] == ([2.0, 6.0, 10.0],) and said["set_yticklabels"] == (
        ["a", "b", "c"],)
    assert said["set_xticks"] == ([2.0, 6.0],)
    assert said["set_xticklabels"] == (["frame 1", "frame 2"],)
    assert said["savefig"] == ("strip.png",)


def test_the_time_course_reads_each_worlds_farthest_novel_split_and_its_codes_on_the_probe():
    """Shapes2D: level-2 and 111's probe (as the long runs always read); shapes3d: level-2 and the
    mean of its six codes on the probe; the clips, no level-2: level-1 and its two clips; an
    evaluation that kept no probe reads nan, not a KeyError."""
    from worlds import clips, shapes3d
    assert collect_tables.course_rows(data) == (
        ("level2", "level-2 composed (%)"), ("probe_level2", "111 on the study's probe (%)"))
    assert collect_tables.course_rows(shapes3d)[1] == (
        "probe_level2", "level-2 on the study's probe (%)")
    assert collect_tables.course_rows(clips) == (
        ("level1", "level-1 composed (%)"), ("probe_level1", "level-1 on the study's probe (%)"))
    probe = {code: 0.0 for code in shapes3d.COMPOSITIONS}
    probe.update({code: 1.0 for code in shapes3d.LEVEL2[:3]})
    assert collect_tables.course_reading({"probe_acc": probe}, "probe_level2", shapes3d) == 0.5
    metrics = {"level1": 0.25, "probe_acc": {"02": 0.5, "10": 1.0, "00": 0.0}}
    assert collect_tables.course_reading(metrics, "probe_level1", clips) == 0.75
    assert collect_tables.course_reading(metrics, "level1", clips) == 0.25
    assert np.isnan(collect_tables.course_reading({"level1": 0.0}, "probe_level1", clips))


def test_the_time_course_takes_a_column_per_setting_where_a_script_has_two():
    """Two long cosine settings of one script each get their own column, keyed by setting; a
    script with one keeps its script's name; a constant-rate run stays off the course."""
    def members(model, **flags):
        config = {"model": model, "seed": 0, "lr_schedule": "cosine", "steps": 10000, **flags}
        return [("run", config, [])]
    groups = {"givt.py --tokenizer pca": members("givt", tokenizer="pca"),
              "givt.py": members("givt"), "dit.py": members("dit"),
              "dit.py --lr-schedule constant": members("dit", lr_schedule="constant")}
    course = collect_tables.on_course(groups)
    assert list(course) == ["givt.py --tokenizer pca", "givt.py", "dit.py"]
    assert course["dit.py"][0] == "dit.py"


def test_collect_the_time_courses_mean_is_over_the_steps_every_seed_reached(monkeypatch):
    """Seed 0 evaluated at steps 2, 4 and 8, seed 1 at 2 and 4 only: each seed's thin line at its
    own steps, the mean at 2 and 4 alone."""
    _, first = course_run(0, (0.2, 0.6, 0.1), (0.5, 0.5, 0.3))
    config, second = course_run(1, (0.4, 0.4, 0.3), (0.1, 0.9, 0.7))
    course = {"maskgit.py": ("maskgit.py --lr-schedule cosine", [("a", config, first),
                                                                 ("b", config, second[:2])])}
    panels = [Axes(), Axes()]
    import matplotlib.pyplot as plt
    monkeypatch.setattr(collect_pictures.runs, "pyplot", lambda: type("plt", (), {
        "rcParams": plt.rcParams, "close": staticmethod(lambda fig: None),
        "subplots": staticmethod(lambda *a, **k: (Axes(), [[panels[0]], [panels[1]]]))}))
    collect_pictures.plot_time_course("unused.png", course)
    assert panels[0].lines == [([2, 4, 8], [20.0, 60.0, 10.0], "-", None),
                               ([2, 4], [40.0, 40.0], "-", None),
                               ([2, 4], [30.0, 50.0], "-", "mean of 2 seeds")]
