"""objects.py's flags, each doing what it says, and the EMA it evaluates, its closed form: what
tests/test_flags.py holds for the six generators of Shapes2D, held for objects.py's own training
loop (its sampler and attention masks are held in tests/test_objects.py).

Every run here is tiny and in this process (width 16, one block, batch 2, one to four steps), with
objects.draw_and_read and runs.Checkpoints' saving replaced by recorders: no judge, no files.
"""
import copy
import os

import elsewhere
import numpy as np
import pytest
import torch
from test_flags import calls, closed_form, states_differ

from studies import objects
import runs

TINY = ["--steps", "1", "--batch-size", "2", "--width", "16", "--depth", "1", "--heads", "2",
        "--eval-every", "1", "--samples-per-comp", "1", "--sample-steps", "2", "--device", "cpu"]
MOVING = ["--steps", "2", "--warm-up-steps", "1", "--lr", "1e-2"]   # the second step's loss moves


def config(*flags):
    _, args = objects.parse([*TINY, *map(str, flags), "--out", "unused-run-folder"])
    return dict(vars(args), model=objects.NAME)


class Run:
    """What one tiny training showed: the network at the start, each step's loss and flow_loss
    call (x_0, the condition, the time distribution), each evaluation's (step, network) and each
    checkpoint's state."""

    def __init__(self, config):
        self.config, self.network, self.initial = config, None, None
        self.losses, self.outs, self.batches = [], [], []
        self.evaluations, self.checkpoints = [], []


def train(*flags, device=None, resume_from=None):
    run = Run(config(*flags, *(["--resume"] if resume_from else [])))
    if device is not None:
        run.config["device"] = device
    flow_loss = objects.flow_loss

    class Checkpoints(runs.Checkpoints):
        def __init__(self, config, **parts):
            super().__init__(config, **parts)
            run.network = parts["model"]
            run.initial = copy.deepcopy(parts["model"].state_dict())

        def resume(self):
            if not self.config["resume"]:
                return 0
            self.restore(copy.deepcopy(resume_from))
            return resume_from["step"]

        def save(self, step):
            run.outs.append(self.config["out"])
            run.checkpoints.append(copy.deepcopy(self.state(step)))

    def loss(model, x_0, values, present, rng, time_dist):
        run.batches.append((x_0, values, present, time_dist))
        if len(run.batches) > 10:                # a run that ignores --steps stops here, at once
            raise AssertionError(f"more than 10 steps of a run of {run.config['steps']}")
        return flow_loss(model, x_0, values, present, rng, time_dist)

    def draw_and_read(model, tokenizer, config, step, loss):
        run.losses.append(float(loss.detach()))
        run.evaluations.append((step, copy.deepcopy(model.state_dict())))
        return {"step": step}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(objects, "flow_loss", loss)
        patch.setattr(objects, "draw_and_read", draw_and_read)
        patch.setattr(runs, "Checkpoints", Checkpoints)
        with torch.random.fork_rng(devices=[]):
            objects.train(run.config)
    return run


_TRAINED = {}


def trained(*flags):
    """train(*flags), once per session: shared by the tests that only read it."""
    key = tuple(map(str, flags))
    if key not in _TRAINED:
        _TRAINED[key] = train(*flags)
    return _TRAINED[key]


def rates(run):
    return [state["optimizer"]["param_groups"][0]["lr"] for state in run.checkpoints]


# --------------------------------------------------------------------------- the training loop
def test_objects_batch_size_sets_the_images_per_step():
    assert [len(x_0) for x_0, *_ in trained("--batch-size", "3").batches] == [3]


def test_objects_cond_sets_what_the_training_condition_tells():
    """one: one location for every image; all: every disc's, 1 to 3 of them."""
    one = trained("--cond", "one", "--batch-size", 8)
    assert (torch.cat([present.sum(1) for _, _, present, _ in one.batches]) == 1).all()
    every = trained("--batch-size", 8)
    told = torch.cat([present.sum(1) for _, _, present, _ in every.batches])
    assert (told > 1).any() and (told <= 3).all()


def test_objects_time_dist_chooses_the_training_times():
    uniform = trained("--time-dist", "uniform")
    assert [kind for *_, kind in uniform.batches] == ["uniform"]
    assert uniform.losses != trained().losses


def test_objects_steps_sets_the_number_of_training_steps():
    run = trained("--steps", "3")
    assert len(run.losses) == 3 and run.evaluations[-1][0] == 3


def test_objects_eval_every_sets_the_evaluation_steps():
    run = trained("--steps", "4", "--eval-every", "2")
    assert [step for step, _ in run.evaluations] == [2, 3, 4]


def test_objects_lr_sets_the_peak_rate_and_warm_up_steps_its_rise():
    assert rates(trained("--steps", "3", "--lr", "0.004", "--warm-up-steps", "1")) == \
        pytest.approx([0.004] * 3)
    assert rates(trained("--steps", "3", "--lr", "0.004", "--warm-up-steps", "2")) == \
        pytest.approx([0.002, 0.004, 0.004])


def test_objects_weight_decay_reaches_the_optimizer():
    decayed, plain = trained(*MOVING, "--weight-decay", "0.5"), trained(*MOVING)
    assert decayed.checkpoints[0]["optimizer"]["param_groups"][0]["weight_decay"] == 0.5
    assert states_differ(decayed.checkpoints[-1]["model"], plain.checkpoints[-1]["model"])


def test_objects_seed_sets_the_initial_network_and_the_images():
    one, zero = trained("--seed", "1"), trained()
    assert states_differ(one.initial, zero.initial)
    assert not torch.equal(one.batches[0][0], zero.batches[0][0])


def test_objects_out_is_where_the_checkpoints_go(tmp_path):
    """objects.py hands its --out to runs.Checkpoints, which writes ckpt.pt there."""
    run = trained()
    assert set(run.outs) == {"unused-run-folder"} and run.checkpoints
    settings = dict(config(), out=str(tmp_path / "out"))
    runs.Checkpoints(settings, model=torch.nn.Linear(1, 1)).save(1)
    assert os.listdir(tmp_path) == ["out"] and os.listdir(tmp_path / "out") == ["ckpt.pt"]


def test_objects_resume_continues_from_the_checkpoint():
    """A run of three steps resumed from its checkpoint after step two ends where the run ended."""
    straight = trained("--steps", "3")
    assert straight.checkpoints[1]["step"] == 2
    resumed = train("--steps", "3", resume_from=straight.checkpoints[1])
    assert resumed.losses == straight.losses[2:]
    for key in ("model", "ema"):
        assert not states_differ(resumed.checkpoints[-1][key], straight.checkpoints[-1][key]), key


def test_objects_device_puts_the_network_and_every_batch_there():
    """On the simulated device of tests/elsewhere.py (tests/test_devices.py holds whole runs)."""
    with elsewhere.elsewhere():
        run = train(device=str(elsewhere.ELSEWHERE))
    assert all(p.device == elsewhere.ELSEWHERE for p in run.network.parameters())
    assert all(x_0.device == elsewhere.ELSEWHERE for x_0, *_ in run.batches)


def test_objects_ema_decay_and_its_warm_up_give_the_closed_form_ema():
    """After each of three steps, for the default --ema-decay and for 0.05: the EMA is
    prod_s d_s w_0 + sum_s (1 - d_s) prod_{r > s} d_r theta_s, d_s = min(d, (1 + s) / (10 + s)),
    and it is the network each evaluation reads."""
    for flags, most in (((), 0.999), (("--ema-decay", "0.05"), 0.05)):
        run = trained("--steps", "3", "--warm-up-steps", "1", "--lr", "1e-2", *flags)
        thetas = [state["model"] for state in run.checkpoints]
        assert states_differ(thetas[-1], run.initial)                        # the network moved
        for k, state in enumerate(run.checkpoints, 1):
            decays = [min(most, (1 + s) / (10 + s)) for s in range(k)]
            for key, value in closed_form(run.initial, thetas[:k], decays).items():
                assert torch.allclose(state["ema"][key].double(), value, atol=1e-6), (k, key)
            step, evaluated = run.evaluations[k - 1]
            assert step == k and not states_differ(evaluated, state["ema"]), k


# ------------------------------------------------------------------- the network and the draw
def test_objects_width_depth_heads_shape_the_network():
    model, _ = objects.build(config("--width", "24", "--depth", "2", "--heads", "3"))
    attention = model.blocks[0].attention
    assert (len(model.blocks), attention.embed_dim, attention.num_heads) == (2, 24, 3)


def test_objects_locality_chooses_how_the_locations_enter():
    """The network built is the arm asked for (tests/test_objects.py holds what each arm reads)."""
    for locality in ("global", "local", "patch"):
        assert objects.build(config("--locality", locality))[0].locality == locality


def test_objects_sample_steps_sets_the_number_of_euler_steps():
    model, tokenizer = objects.build(config())
    values, present = objects.padded([np.array([[9.0, 13.0]], np.float32)])
    draw = lambda: objects.draw(model, tokenizer, config("--sample-steps", "5"), values, present,  # noqa: E731
                                torch.Generator().manual_seed(0))
    assert calls(model, draw) == 5


def test_objects_samples_per_comp_sets_the_samples_of_each_number_asked(monkeypatch):
    """An evaluation asks 0 to 10 objects, --samples-per-comp images of each (the judge, the
    readings and the files left out)."""
    asked = []

    def draw(model, tokenizer, config, values, present, generator):
        asked.append(present.sum(1))
        return np.zeros((len(values), 32, 32, 3), np.float32)
    monkeypatch.setattr(objects, "draw", draw)
    for reading in ("locality", "pixel_locality"):
        monkeypatch.setattr(objects, reading, lambda *args, **kwargs: torch.zeros(()))
    monkeypatch.setattr(runs, "keep", lambda *args, **kwargs: None)
    monkeypatch.setattr(objects, "save_grid", lambda *args, **kwargs: None)
    settings = config("--samples-per-comp", "3")
    runs.start_clock(settings)
    model, tokenizer = objects.build(settings)
    objects.draw_and_read(model, tokenizer, settings, 1, 0.0)
    assert asked[0].tolist() == np.repeat(objects.ASKED, 3).tolist()
