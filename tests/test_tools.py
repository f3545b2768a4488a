"""Three tools against cases worked out by hand: tools/rejudge.py (which world a run learnt, which
evaluations it judges again and what it keeps), tools/world.py (the reach: the share of the novel
codes' tokens and distinct ids that training never shows) and tools/lesson.py (which runs, rows
and samples its picture draws, and where). The judge, the tokenizers and the worlds' renders are
stand-ins where the tool only hands things on; their own tests hold them."""
import importlib.util
import json
import os
import sys
import types

import numpy as np
import pytest

from worlds import clips
import data
import probe
from worlds import shapes3d

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import lesson  # noqa: E402
import rejudge  # noqa: E402

spec = importlib.util.spec_from_file_location("world_tool", os.path.join(ROOT, "tools",
                                                                         "world.py"))
world_tool = importlib.util.module_from_spec(spec)          # not "world": a name tests use
spec.loader.exec_module(world_tool)


# ------------------------------------------------------------------------ tools/rejudge.py
def write_config(folder, config):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))


def test_rejudge_reads_the_world_a_run_learnt_shapes2d_unless_its_config_says(tmp_path):
    """world_of: no config.json, or a config without "world", is Shapes2D; a config's world and
    seen count (the diversity sweep's narrowed world) are the ones it names."""
    assert rejudge.world_of(str(tmp_path)) is data
    write_config(tmp_path, {"model": "dit", "steps": 4})
    assert rejudge.world_of(str(tmp_path)) is data
    write_config(tmp_path, {"world": "clips"})
    assert rejudge.world_of(str(tmp_path)) is clips
    write_config(tmp_path, {"world": "shapes3d", "seen_count": 12})
    narrowed = rejudge.world_of(str(tmp_path))
    assert narrowed is shapes3d.narrowed(12) and len(narrowed.SEEN) == 12


@pytest.fixture
def stand_in_judge(monkeypatch):
    """judge.evaluate and the run's pictures replaced by recorders: a judged evaluation reads
    "acc" 000 as its samples' first pixel (each step's samples are filled with one number) and
    "seen" as a tenth of it. Returns (what was judged, the pictures drawn)."""
    judged, drawn = [], []

    def evaluate(images, factors, world):
        judged.append((int(images.flat[0]), world))
        return {"acc": {"000": float(images.flat[0])}, "seen": float(images.flat[0]) / 10}
    monkeypatch.setattr(rejudge.judge, "evaluate", evaluate)
    for name in ("save_samples_png", "save_grid_png", "save_curves_png"):
        monkeypatch.setattr(rejudge.runs, name, lambda path, *args, name=name, **kwargs:
                            drawn.append((name, os.path.basename(path), args, kwargs)))
    return judged, drawn


def write_run(folder, steps, kept_only):
    """A run's metrics at `steps` (an older judge's readings, its loss and seconds) and its
    samples: one file a step (a run folder) or the last alone (a run kept under results/,
    samples.npz), each filled with its step (kept: with 9)."""
    old = [{"step": s, "loss": 1.0 / s, "seconds": 10.0 * s, "acc": {"000": 0.5},
            "fidelity": {"000": 0.25}, "probe_acc": {"000": 0.75}, "seen": 0.5} for s in steps]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in old))
    factors = np.zeros((2, 3), np.int64)
    if kept_only:
        np.savez(folder / "samples.npz", images=np.full((2, 32, 32, 3), 9, np.uint8),
                 factors=factors)
    else:
        (folder / "samples").mkdir()
        for s in steps:
            np.savez(folder / "samples" / f"step_{s}.npz",
                     images=np.full((2, 32, 32, 3), s, np.uint8), factors=factors)
    return old


def test_rejudge_judges_every_evaluation_of_a_run_folder_and_keeps_its_loss_and_time(
        tmp_path, stand_in_judge):
    """A run folder keeps every evaluation's samples: each evaluation is judged again from its own
    step's samples, keeps its loss and seconds and nothing else of the old readings; the metrics
    file is rewritten, and the samples' picture (the last step's) and the curves redrawn."""
    judged, drawn = stand_in_judge
    folder = tmp_path / "dit-seed0"
    write_run(folder, [2, 4], kept_only=False)
    history = rejudge.rejudge(str(folder))
    assert history == [{"step": s, "loss": 1.0 / s, "seconds": 10.0 * s, "acc": {"000": float(s)},
                        "seen": s / 10} for s in (2, 4)]
    assert rejudge.runs.read_metrics(str(folder)) == history
    assert sorted(os.listdir(folder)) == ["metrics.jsonl", "samples"]        # no .tmp left
    assert judged == [(2, data), (4, data)]
    (name, picture, (images, factors), kwargs), curves = drawn
    assert (name, picture, int(images.flat[0])) == ("save_samples_png", "samples.png", 4)
    assert kwargs == {"title": "dit-seed0, step 4", "world": data}
    assert curves == ("save_curves_png", "curves.png", (history,),
                      {"title": "dit-seed0", "world": data})


def test_rejudge_judges_a_kept_runs_last_evaluation_and_drops_only_the_others_probe(
        tmp_path, stand_in_judge):
    """A run kept under results/ has its last samples only (samples.npz): its last evaluation is
    judged again from them (loss and seconds kept); the earlier ones keep their readings but the
    probe's, which cannot be read again."""
    judged, _ = stand_in_judge
    folder = tmp_path / "results" / "ladder" / "runs" / "mar"
    old = write_run(folder, [2, 4, 6], kept_only=True)
    history = rejudge.rejudge(str(folder))
    assert history[:2] == [{k: v for k, v in m.items() if k != "probe_acc"} for m in old[:2]]
    assert history[2] == {"step": 6, "loss": 1 / 6, "seconds": 60.0, "acc": {"000": 9.0},
                          "seen": 0.9}
    assert judged == [(9, data)]
    assert rejudge.runs.read_metrics(str(folder)) == history


def test_rejudge_judges_a_run_of_another_world_in_its_world(tmp_path, stand_in_judge):
    """A diversity-sweep run (shapes3d, 12 seen codes): judged in its narrowed world, its samples
    drawn as that world's grid."""
    judged, drawn = stand_in_judge
    folder = tmp_path / "maskgit-seen12"
    write_run(folder, [3], kept_only=False)
    write_config(folder, {"world": "shapes3d", "seen_count": 12})
    rejudge.rejudge(str(folder))
    assert judged == [(3, shapes3d.narrowed(12))]
    assert [d[0] for d in drawn] == ["save_grid_png", "save_curves_png"]
    assert drawn[0][3]["world"] is shapes3d.narrowed(12)


# -------------------------------------------------------------------------- tools/world.py
class Encoder:
    """A stand-in codebook: an image here is already its tokens; `shift` moves every id, `merge`
    maps every id to 0 (a codebook fitted elsewhere)."""

    def __init__(self, merge=False):
        self.merge = merge

    def encode(self, images):
        tokens = np.asarray(images)
        return tokens * 0 if self.merge else tokens


TOKENS = {"000": [[9, 9]], "011": [[1, 3]], "101": [[3, 4]], "111": [[2, 2], [5, 2]]}


def renders(codes, code_to_bits=data.code_to_bits):
    """The novel renders of the hand-made case, as tokens: level-1's 011 and 101 (one each), two
    of level-2's 111, one of the seen 000 that the reach must leave out."""
    chosen = [(c, t) for c in codes for t in TOKENS[c]]
    return np.array([t for _, t in chosen]), np.array([code_to_bits(c) for c, _ in chosen])


def test_reach_is_the_share_of_novel_tokens_and_distinct_ids_training_never_shows():
    """Training shows the ids {1, 2, 9}. Level 1's tokens 1 3 3 4: three of four unseen, two of
    its three distinct ids (3, 4); level 2's 2 2 5 2: one of four, one of two ids (5). The seen
    render (9 9) counts in neither."""
    images, bits = renders(["000", "011", "101", "111"])
    shares = world_tool.reach(images, bits, Encoder(), {1, 2, 9})
    assert set(shares) == {"level1", "level2"}
    assert shares["level1"] == pytest.approx((3 / 4, 2 / 3))
    assert shares["level2"] == pytest.approx((1 / 4, 1 / 2))
    same = world_tool.reach(images, bits, Encoder(), {1, 2, 9}, world=data)
    assert same == shares


def test_each_seen_sets_reach_uses_its_own_codebook_and_training_set(monkeypatch):
    """seen_reach with stand-in worlds and codebooks: the novel renders are the full world's
    (its level-1 and level-2 codes, HELD_OUT_PER_CODE each, the held-out seed); each seen count's
    reach uses the codebook fitted for its narrowed world and that world's training set at its
    own train_per_comp. Seen count 12 trains {1, 2}: level 1 3/4 and 2/3, level 2 1/4 and 1/2;
    24 trains {3, 4, 5, 9}: level 1 1/4 and 1/3, level 2 3/4 and 1/2. The stand-in world's codes
    are not Shapes2D's: its splits are its own."""
    names = {"000": "seen", "011": "one", "101": "other", "111": "both"}    # its codes' names
    splits = {"seen": ("seen",), "level1": ("one", "other"), "level2": ("both",)}
    asked, fitted, trained_on = [], [], []

    def narrowed(count, training, per_comp):
        def training_set(n_per_code):
            trained_on.append((count, n_per_code))
            return np.array(training), None, None
        return types.SimpleNamespace(name=count, SPLITS=splits,
                                     bits_to_code=lambda bits: list(names.values())[bits[0]],
                                     RUN_DEFAULTS={"train_per_comp": per_comp},
                                     training_set=training_set)

    def make_dataset(codes, n_per_code, seed):
        asked.append((codes, n_per_code, seed))
        index = {name: i for i, name in enumerate(names.values())}
        return (*renders([c for c in names if names[c] in codes], lambda c: [index[names[c]]]),
                None)
    full = narrowed(None, [[7, 7]], 100)
    full.LEVEL1, full.LEVEL2, full.HELD_OUT_PER_CODE = ("one", "other"), ("both",), 1
    full.make_dataset = make_dataset
    by_count = {None: full, 12: narrowed(12, [[1, 2]], 7), 24: narrowed(24, [[3, 4], [5, 9]], 3)}

    def world(name):
        config = name if isinstance(name, dict) else {"world": name}
        assert config["world"] == "shapes3d"
        return by_count[config.get("seen_count")]

    def load_tokenizer(kind, world):
        fitted.append((kind, world.name))
        return Encoder(merge=world is full)
    monkeypatch.setattr(world_tool.worlds, "world", world)
    monkeypatch.setattr(world_tool.tokenizers, "load_tokenizer", load_tokenizer)
    shares = world_tool.seen_reach((12, 24))
    assert asked == [(("one", "other", "both"), 1, probe.HELD_OUT_SEED)]
    assert fitted == [("codebook", 12), ("codebook", 24)]
    assert trained_on == [(12, 7), (24, 3)]
    assert list(shares) == [12, 24]
    assert shares[12]["level1"] == pytest.approx((3 / 4, 2 / 3))
    assert shares[12]["level2"] == pytest.approx((1 / 4, 1 / 2))
    assert shares[24]["level1"] == pytest.approx((1 / 4, 1 / 3))
    assert shares[24]["level2"] == pytest.approx((3 / 4, 1 / 2))


def test_the_seen_sets_reach_is_written_for_collect_and_for_a_person(tmp_path):
    """reach.json: {N: {split: [tokens, ids]}}, as tools/collect.py reads it back; reach.md: a row
    a seen count, level-1 tokens and ids, then level-2's, in percent to a tenth."""
    import collect
    shares = {12: {"level1": (0.5, 0.25), "level2": (0.125, 1.0)},
              95: {"level1": (0.0, 0.0), "level2": (0.07, 0.1)}}
    lines = world_tool.write_seen_reach(str(tmp_path / "shapes3d"), shares)
    assert collect.reach_of(str(tmp_path / "shapes3d")) == {
        "12": {"level1": [0.5, 0.25], "level2": [0.125, 1.0]},
        "95": {"level1": [0.0, 0.0], "level2": [0.07, 0.1]}}
    assert lines[2:] == ["| seen codes | level-1 tokens | level-1 codes | level-2 tokens | "
                         "level-2 codes |", "|---|---|---|---|---|",
                         "| 12 | 50.0% | 25.0% | 12.5% | 100.0% |",
                         "| 95 | 0.0% | 0.0% | 7.0% | 10.0% |"]
    assert (tmp_path / "shapes3d" / "reach.md").read_text() == "\n".join(lines) + "\n"


# ------------------------------------------------------------------------- tools/lesson.py
LADDER = ("maskgit", "jepa_maskgit", "givt", "mar", "dit")


def test_describe_names_a_composition_by_colour_size_and_shape():
    """The bits are shape, colour, size: 100 is the red big triangle, 111 the blue small one."""
    assert {code: lesson.describe(code) for code in data.COMPOSITIONS} == {
        "000": "red big circle", "001": "red small circle", "010": "blue big circle",
        "011": "blue small circle", "100": "red big triangle", "101": "red small triangle",
        "110": "blue big triangle", "111": "blue small triangle"}


def test_first_samples_are_a_runs_first_final_samples_asked_for_the_code(tmp_path, monkeypatch):
    """A run's samples.npz asked for 111, 100, 111, 000, 111, 111 (each image filled with its
    place): its first three of 111 are places 0, 2 and 4; asking two of 100, or a run with no
    samples, says why it cannot."""
    monkeypatch.setattr(lesson, "RUNS", str(tmp_path))
    codes = ["111", "100", "111", "000", "111", "111"]
    (tmp_path / "dit").mkdir()
    np.savez(tmp_path / "dit" / "samples.npz",
             images=np.arange(6, dtype=np.uint8)[:, None, None, None] * np.ones((1, 32, 32, 3),
                                                                              np.uint8),
             factors=np.array([data.code_to_bits(c) for c in codes]))
    three = lesson.first_samples("dit", "111", n=3)
    assert three.shape == (3, 32, 32, 3) and [int(i[0, 0, 0]) for i in three] == [0, 2, 4]
    assert [int(i[0, 0, 0]) for i in lesson.first_samples("dit", "100", n=1)] == [1]
    with pytest.raises(SystemExit, match="holds 1 samples of 100, 2 are drawn"):
        lesson.first_samples("dit", "100", n=2)
    with pytest.raises(SystemExit, match="is missing"):
        lesson.first_samples("mar", "100")


def test_a_strip_puts_images_side_by_side_a_gap_apart():
    images = np.stack([np.full((32, 32, 3), v, np.uint8) for v in (10, 20, 30)])
    row = lesson.strip(images)
    gap = lesson.GAP
    assert row.shape == (32, 3 * 32 + 2 * gap, 3)
    for i, v in enumerate((10, 20, 30)):
        assert (row[:, i * (32 + gap):i * (32 + gap) + 32] == v).all()
    for i in (0, 1):
        assert (row[:, 32 + i * (32 + gap):(i + 1) * (32 + gap)] == lesson.BACKGROUND).all()


def stand_in_samples(monkeypatch):
    """lesson.first_samples replaced: sample j of model i asked for the seen code filled with
    1 + 20 i + j, for the novel code with 11 + 20 i + j. Returns what was asked."""
    asked = []

    def first_samples(run, code, n=lesson.PER_SIDE):
        asked.append((run, code))
        i, novel = LADDER.index(run), code == lesson.NOVEL
        return np.stack([np.full((32, 32, 3), 1 + 20 * i + 10 * novel + j, np.uint8)
                         for j in range(n)])
    monkeypatch.setattr(lesson, "first_samples", first_samples)
    return asked


def test_the_mosaic_is_a_row_a_model_seen_samples_then_novel_each_pixel_a_block(monkeypatch):
    """Five rows in the ladder's order, each its model's five samples of 100, a split with a light
    line, then its five of 111; rows a gap apart; every image pixel a SCALE x SCALE block."""
    asked = stand_in_samples(monkeypatch)
    picture = lesson.mosaic()
    assert asked == [(run, code) for run in LADDER for code in ("100", "111")]
    gap, split, scale, side = lesson.GAP, lesson.SPLIT, lesson.SCALE, 5 * 32 + 4 * lesson.GAP
    assert picture.shape == ((5 * 32 + 4 * gap) * scale, (2 * side + split) * scale, 3)
    plain = picture[::scale, ::scale]
    assert (plain.repeat(scale, 0).repeat(scale, 1) == picture).all()
    for i in range(5):
        top = i * (32 + gap)
        for j in range(5):
            left = j * (32 + gap)
            assert (plain[top:top + 32, left:left + 32] == 1 + 20 * i + j).all(), (i, j)
            left += side + split
            assert (plain[top:top + 32, left:left + 32] == 11 + 20 * i + j).all(), (i, j)
        middle = plain[top:top + 32, side:side + split]
        assert (middle[:, split // 2 - 1:split // 2 + 1] == 150).all()
        assert (middle[:, :split // 2 - 1] == lesson.BACKGROUND).all()
        assert (middle[:, split // 2 + 1:] == lesson.BACKGROUND).all()
        if i:
            assert (plain[top - gap:top] == lesson.BACKGROUND).all()


def test_the_lesson_picture_places_the_mosaic_and_labels_each_row_and_half(tmp_path,
                                                                          monkeypatch):
    """save_lesson, read back: the picture is the mosaic's size plus the margins; the mosaic sits
    pixel for pixel LEFT from the left and TOP from the top; each model's name and objective
    (in its kind's colour) stand left of its own row; each half's heading and what was asked are
    centred over that half; the key names both kinds in their colours."""
    import matplotlib.figure
    from matplotlib.image import imread
    stand_in_samples(monkeypatch)
    said, text = [], matplotlib.figure.Figure.text

    def recorded(self, x, y, s, **kwargs):
        said.append((s, x, y, kwargs))
        return text(self, x, y, s, **kwargs)
    monkeypatch.setattr(matplotlib.figure.Figure, "text", recorded)
    path = tmp_path / "lesson.png"
    samples = lesson.save_lesson(str(path))
    assert (samples == lesson.mosaic()).all()
    height, width = samples.shape[:2]
    read = (imread(path)[..., :3] * 255).round().astype(np.uint8)
    size = (lesson.LEFT + width + lesson.RIGHT, lesson.TOP + height + lesson.BOTTOM)
    assert read.shape == (size[1], size[0], 3)
    assert (read[lesson.TOP:lesson.TOP + height, lesson.LEFT:lesson.LEFT + width] == samples).all()
    assert (read[-1, -1] == lesson.BACKGROUND).all()
    at = {s: (x * size[0], (1 - y) * size[1], kwargs) for s, x, y, kwargs in said}  # screen px
    row = (32 + lesson.GAP) * lesson.SCALE
    colours = {"maskgit": "#ffb060", "jepa_maskgit": "#ffb060", "givt": "#9be09b",
               "mar": "#9be09b", "dit": "#9be09b"}
    for i, (run, name, objective, _) in enumerate(lesson.MODELS):
        assert run == LADDER[i]
        for label in (name, objective):
            x, from_top, kwargs = at[label]
            assert x == pytest.approx(lesson.LEFT - 10) and kwargs["ha"] == "right"
            assert lesson.TOP + i * row < from_top < lesson.TOP + i * row + 32 * lesson.SCALE
        assert at[objective][2]["color"] == colours[run]
    side = (5 * 32 + 4 * lesson.GAP) * lesson.SCALE
    for label, centre in (("seen in training", side / 2),
                          ("asked for 100: red big triangle", side / 2),
                          ("never seen", side + lesson.SPLIT * lesson.SCALE + side / 2),
                          ("asked for 111: blue small triangle",
                           side + lesson.SPLIT * lesson.SCALE + side / 2)):
        x, from_top, kwargs = at[label]
        assert x == pytest.approx(lesson.LEFT + centre) and kwargs["ha"] == "center", label
        assert 0 < from_top < lesson.TOP, label
    assert at["categorical objective"][2]["color"] == "#ffb060"
    assert at["continuous objective"][2]["color"] == "#9be09b"
