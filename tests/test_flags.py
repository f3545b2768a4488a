"""Every flag of the six generator scripts does what it says, and only where it says; and the EMA
each of them evaluates is its closed form.

- A flag that has no effect fails its test: the built network, a step or two of training, or one
  decoding, under a fixed seed, with the flag's value against another. The common flags
  (runs.add_common_arguments) are held in every generator at once, test_common_<flag>_...; a
  script's own flags by test_<script>_<flag>_... (maskgit.py's build and draw serve
  jepa_maskgit.py as well: those tests try both scripts).
- What only training does (condition dropout, text-partial's left-out words, the losses' knobs)
  is off when an evaluation draws.
- The EMA: after k steps a generator evaluates
      ema_k = prod_s d_s ema_0 + sum_s (1 - d_s) prod_{r > s} d_r theta_s,
      d_s = min(--ema-decay, (1 + s) / (10 + s)),
  theta_s the network after step s, computed here directly (jepa_maskgit.py's target likewise,
  with its momentum schedule).

Every run here is tiny and in this process (width 16, one block, batch 2, one to four steps),
with runs.draw_and_read and runs.Checkpoints' saving replaced by recorders: no judge, no files.
"""
import copy
import math
import os
import re
import sys

import elsewhere
import numpy as np
import pytest
import torch

import captions
import data
import runs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
MODULES = {name: runs.script(name) for name in runs.GENERATORS}
SCRIPTS = tuple(name for name in runs.GENERATORS      # maskgit_factored.py trains by maskgit.py
                if name != "maskgit_factored")
TINY = ["--steps", "1", "--batch-size", "2", "--train-per-comp", "2", "--width", "16",
        "--depth", "1", "--heads", "2", "--eval-every", "1", "--samples-per-comp", "1",
        "--device", "cpu"]
OWN = {"maskgit": ["--sample-steps", "3"],
       "jepa_maskgit": ["--sample-steps", "3", "--jepa-layers", "0"],
       "givt": ["--sample-steps", "3"], "mar": ["--sample-steps", "2", "--diffusion-steps", "2"],
       "dit": ["--sample-steps", "3"], "ar": [], "maskgit_factored": ["--sample-steps", "3"]}
MOVING = ["--steps", "2", "--warm-up-steps", "1", "--lr", "1e-2"]   # the second step's loss moves
MASKGITS = ("maskgit", "jepa_maskgit", "maskgit_factored")   # maskgit.py's flags and draw


# ------------------------------------------------------------------------------ the harness
def config(script, *flags):
    """The script's config for TINY, its own small settings, then flags (the last one wins)."""
    module = MODULES[script]
    _, args = module.parse([*TINY, *OWN[script], *map(str, flags), "--out", "unused-run-folder"])
    return dict(vars(args), model=module.NAME)


class Run:
    """What one tiny training showed: the network (and its weights at the start), each
    evaluation's loss, (step, network) and checkpoint state (--eval-every 1: one after every step
    of the first four), and each step's batch, condition and rate."""

    def __init__(self, config):
        self.config, self.network, self.initial, self.data = config, None, None, None
        self.losses, self.outs, self.batches, self.conditions = [], [], [], []
        self.evaluations, self.checkpoints, self.rates = [], [], []


def train(script, *flags, device=None, resume_from=None):
    """Train the script's tiny config (train(config), as its command line does) and record it.
    resume_from: a checkpoint state the run resumes from (--resume); device: config["device"]."""
    run = Run(config(script, *flags, *(["--resume"] if resume_from else [])))
    if device is not None:
        run.config["device"] = device
    learning_rate, conditioning = runs.learning_rate, data.conditioning

    class Recorded(data.TrainingData):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            run.data = self

        def batch(self, size, rng):
            tokens, values, present = super().batch(size, rng)
            run.batches.append((size, tokens, run.conditions[-1][0]))   # the latents told
            return tokens, values, present

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

    def rate(config, step):
        if len(run.rates) > 10:                  # a run that ignores --steps stops here, at once
            raise AssertionError(f"{script}: more than 10 steps of a run of {config['steps']}")
        run.rates.append(learning_rate(config, step))
        return run.rates[-1]

    def conditioned(latents, *args, **kwargs):
        run.conditions.append((latents, *conditioning(latents, *args, **kwargs)))
        return run.conditions[-1][1:]

    def draw_and_read(draw, model, tokenizer, config, step, loss):
        run.losses.append(float(loss.detach()))
        run.evaluations.append((step, copy.deepcopy(model.state_dict())))
        return {"seen": 0.0, "level1": 0.0, "level2": 0.0}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(data, "TrainingData", Recorded)
        patch.setattr(data, "conditioning", conditioned)
        patch.setattr(runs, "Checkpoints", Checkpoints)
        patch.setattr(runs, "learning_rate", rate)
        patch.setattr(runs, "draw_and_read", draw_and_read)
        with torch.random.fork_rng(devices=[]):
            MODULES[script].train(run.config)
    return run


_TRAINED = {}


def trained(script, *flags):
    """train(script, *flags), once per session: shared by the tests that only read it."""
    key = (script, *map(str, flags))
    if key not in _TRAINED:
        _TRAINED[key] = train(script, *flags)
    return _TRAINED[key]


_NETWORKS = {}


def network(script, *flags):
    """The script's network as its config builds it, its weights drawn away from the zero start
    (so that every output depends on its input), and its tokenizer."""
    key = (script, *map(str, flags))
    if key not in _NETWORKS:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model, tokenizer = MODULES[script].build(config(script, *flags))
            with torch.no_grad():
                for p in model.parameters():
                    p.normal_(0, 0.2)
        _NETWORKS[key] = model.eval(), tokenizer
    return _NETWORKS[key]


def drawn(script, *flags, model=None):
    """The images (8, H, W, 3) one evaluation draws, one per composition, with this config."""
    model, tokenizer = model or network(script)
    return runs.generate(MODULES[script].draw, model, tokenizer, config(script, *flags),
                         data.requests(1), seed=0)


def calls(module, function):
    """Call function() and count the forward passes of module in it."""
    counted = []
    hook = module.register_forward_hook(lambda *args: counted.append(1))
    try:
        function()
    finally:
        hook.remove()
    return len(counted)


def states_differ(a, b):
    return any(not torch.equal(a[key], b[key]) for key in a)


# ------------------------------------------------------------ the common flags, in every generator
def test_common_batch_size_sets_the_images_per_step():
    for script in SCRIPTS:
        run = trained(script, "--batch-size", "3")
        assert [(size, len(tokens)) for size, tokens, _ in run.batches] == [(3, 3)], script


def test_common_cond_sets_the_training_condition():
    """discrete: the position is hidden in every training condition; continuous: nothing is."""
    for script in SCRIPTS:
        (_, _, present), = trained(script, "--cond", "discrete").conditions
        assert not present[:, 3].any() and present[:, :3].all(), script
        (_, _, present), = trained(script).conditions
        assert present.all(), script


def test_common_cond_drop_sets_how_often_training_hides_a_factor():
    for script in SCRIPTS:
        run = trained(script, "--cond", "dropout", "--cond-drop", "0.9", "--batch-size", "8")
        hidden = 1 - torch.cat([present[:, :3] for _, _, present in run.conditions]).float().mean()
        assert hidden > 0.7, (script, hidden)                  # 24 draws of p = 0.9, not of 0.1


def evaluated_conditions(*flags):
    """The conditions one evaluation (runs.draw_and_read) hands the draw, the judge left out."""
    handed = []

    def draw(model, tokenizer, config, values, present, generator):
        handed.append((values, present))
        return np.zeros((len(values), data.IMAGE_SIZE, data.IMAGE_SIZE, 3))
    settings = config("maskgit", *flags)
    runs.start_clock(settings)                          # what runs.run starts before training
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs, "record", lambda *args, **kwargs: dict(seen=0, level1=0, level2=0))
        runs.draw_and_read(draw, torch.nn.Linear(1, 1), None, settings, 1, 0.0)
    return handed[0]


def test_common_cond_drop_and_text_partial_are_off_at_evaluation():
    """Condition dropout and text-partial's left-out words are training's: every evaluation asks
    for each factor, in every word of the caption, of the latents its seed draws."""
    latents = data.sample_latents(data.requests(4), np.random.default_rng(0))
    for mode in ("dropout", "discrete-dropout"):
        values, present = evaluated_conditions("--cond", mode, "--cond-drop", "0.9",
                                               "--samples-per-comp", "4")
        assert present[:, :3].all(), mode                                   # nothing dropped
        assert torch.equal(values, data.conditioning(latents, mode, train=False)[0]), mode
    ids, present = evaluated_conditions("--cond", "text-partial", "--cond-drop", "0.9",
                                        "--samples-per-comp", "4")
    bits = data.class_bits(torch.as_tensor(latents))
    assert torch.equal(ids, captions.captions(bits)[0])                     # every word said


def test_common_samples_per_comp_sets_how_many_samples_an_evaluation_judges():
    values, _ = evaluated_conditions("--samples-per-comp", "3")
    assert len(values) == 3 * len(data.COMPOSITIONS)


def test_common_data_fresh_draws_new_images_every_step():
    """fixed: every batch comes from the images rendered at the start; fresh: none does."""
    fixed = torch.as_tensor(data.training_set(2)[2], dtype=torch.float32)
    for script in SCRIPTS:
        for kind, inside in (("fixed", True), ("fresh", False)):
            run = trained(script, "--data", kind, "--steps", "2")
            assert run.data.kind == kind, script
            for _, _, latents in run.batches:
                found = (latents.float()[:, None] == fixed[None]).all(-1).any(1)
                assert found.all() if inside else not found.any(), (script, kind)


def test_common_train_per_comp_sets_the_size_of_the_fixed_training_set():
    for script in SCRIPTS:
        run = trained(script, "--train-per-comp", "3")
        assert len(run.data.tokens) == 3 * len(data.SEEN), script


def test_common_weight_decay_reaches_the_optimizer():
    for script in SCRIPTS:
        decayed, plain = trained(script, *MOVING, "--weight-decay", "0.5"), trained(script, *MOVING)
        assert decayed.checkpoints[0]["optimizer"]["param_groups"][0]["weight_decay"] == 0.5, script
        last = decayed.checkpoints[-1]["model"], plain.checkpoints[-1]["model"]
        assert states_differ(*last), script


def test_common_seed_sets_the_initial_network_and_the_data_order():
    for script in SCRIPTS:
        one, zero = trained(script, "--seed", "1"), trained(script)
        assert states_differ(one.initial, zero.initial), script
        assert not torch.equal(one.batches[0][2], zero.batches[0][2]), script


def test_common_steps_sets_the_number_of_training_steps():
    for script in SCRIPTS:
        run = trained(script, "--steps", "3")
        assert len(run.losses) == 3 and run.evaluations[-1][0] == 3, script


def test_common_eval_every_sets_the_evaluation_steps():
    """evaluation_steps(4, 2): 2, round(2 sqrt 2) = 3, and the last step."""
    for script in SCRIPTS:
        run = trained(script, "--steps", "4", "--eval-every", "2")
        assert [step for step, _ in run.evaluations] == [2, 3, 4], script


def rates(run):
    """The learning rate AdamW stepped with at each step, read back from its checkpoints."""
    return [state["optimizer"]["param_groups"][0]["lr"] for state in run.checkpoints]


def test_common_lr_sets_the_peak_rate():
    for script in SCRIPTS:
        run = trained(script, "--steps", "3", "--lr", "0.004", "--warm-up-steps", "1")
        assert rates(run) == pytest.approx([0.004] * 3), script


def test_common_warm_up_steps_sets_the_rise_of_the_rate():
    for script in SCRIPTS:
        run = trained(script, "--steps", "3", "--lr", "0.004", "--warm-up-steps", "2")
        assert rates(run) == pytest.approx([0.002, 0.004, 0.004]), script


def test_common_lr_schedule_cosine_decays_the_rate_after_the_warm_up():
    for script in SCRIPTS:
        run = trained(script, "--steps", "3", "--lr", "0.004", "--warm-up-steps", "1",
                      "--lr-schedule", "cosine")
        expected = [0.004 * (1 + math.cos(math.pi * s / 3)) / 2 for s in range(3)]
        assert rates(run) == pytest.approx(expected), script


def test_common_out_is_where_the_checkpoints_go(tmp_path):
    """Every generator hands its --out to runs.Checkpoints, which writes ckpt.pt there."""
    for script in SCRIPTS:
        run = trained(script)
        assert set(run.outs) == {"unused-run-folder"} and run.checkpoints, script
    settings = dict(config("dit"), out=str(tmp_path / "out"))
    runs.Checkpoints(settings, model=torch.nn.Linear(1, 1)).save(1)
    assert os.listdir(tmp_path) == ["out"] and os.listdir(tmp_path / "out") == ["ckpt.pt"]


def test_common_resume_continues_from_the_checkpoint():
    """A run of three steps resumed from its checkpoint after step two: one more step, ending where
    the run ended (the same --steps: jepa_maskgit.py's target momentum is scheduled over them)."""
    for script in SCRIPTS:
        straight = trained(script, "--steps", "3")
        assert straight.checkpoints[1]["step"] == 2, script
        resumed = train(script, "--steps", "3", resume_from=straight.checkpoints[1])
        assert resumed.losses == straight.losses[2:], script
        jepa = ("target", "predictors") if script == "jepa_maskgit" else ()
        for key in ("model", "ema", *jepa):
            last = resumed.checkpoints[-1][key], straight.checkpoints[-1][key]
            assert not states_differ(*last), (script, key)


def test_common_keep_checkpoints_keeps_each_evaluations_network(tmp_path):
    """runs.Checkpoints.save: ckpt.pt always; checkpoints/step_N.pt with --keep-checkpoints only
    (tests/test_runs.py holds it in a real run)."""
    for keep in (False, True):
        out = tmp_path / str(keep)
        settings = {"keep_checkpoints": keep, "out": str(out), "steps": 5, "eval_every": 5}
        runs.Checkpoints(settings, model=torch.nn.Linear(1, 1), ema=torch.nn.Linear(2, 1)).save(5)
        assert (out / "ckpt.pt").exists()
        assert (out / "checkpoints" / "step_5.pt").exists() == keep


def test_common_compile_compiles_the_blocks_and_its_checkpoints_load_without_it():
    """--compile BACKEND compiles each block of the trained network in place (here the eager
    backend: quick, and the same numbers); what it saves has the same names as without it."""
    compiled = train("dit", "--compile", "eager")
    assert all(block._compiled_call_impl is not None for block in compiled.network.blocks)
    plain = trained("dit")
    assert compiled.checkpoints[-1]["model"].keys() == plain.checkpoints[-1]["model"].keys()
    assert not states_differ(compiled.checkpoints[-1]["model"], plain.checkpoints[-1]["model"])


def test_common_device_puts_the_network_and_every_batch_there():
    """On the simulated device of tests/elsewhere.py (tests/test_devices.py holds whole runs)."""
    for script in SCRIPTS:
        with elsewhere.elsewhere():
            run = train(script, device=str(elsewhere.ELSEWHERE))
        assert all(p.device == elsewhere.ELSEWHERE for p in run.network.parameters()), script
        assert all(tokens.device == elsewhere.ELSEWHERE for _, tokens, _ in run.batches), script


TRAINING_ONLY = ["--cond-drop", "0.6", "--batch-size", "3", "--lr", "0.01", "--warm-up-steps", "5",
                 "--weight-decay", "0.1", "--ema-decay", "0.5", "--data", "fresh",
                 "--train-per-comp", "3", "--lr-schedule", "cosine", "--steps", "7"]
OWN_TRAINING_ONLY = {"maskgit": [],
                     "jepa_maskgit": ["--jepa-weight", "0.1", "--jepa-momentum", "0.5"],
                     "mar": ["--draws", "1", "--time-dist", "uniform"],
                     "dit": ["--time-dist", "uniform"], "givt": [], "ar": []}


def test_common_training_only_flags_change_no_draw():
    """Condition dropout, the losses' knobs (the JEPA loss, MAR's draws, the time distribution)
    and the optimiser's are training's: the same network draws the same images."""
    for script in SCRIPTS:
        training_only = [*TRAINING_ONLY, *OWN_TRAINING_ONLY[script]]
        assert np.array_equal(drawn(script, "--cond", "dropout"),
                              drawn(script, "--cond", "dropout", *training_only)), script


# ------------------------------------------------------------------------------------ the EMA
def closed_form(initial, thetas, rates_kept):
    """prod_s d_s w_0 + sum_s (1 - d_s) prod_{r > s} d_r theta_s, in float64, per tensor."""
    expected = {}
    for key, start in initial.items():
        if not start.is_floating_point():
            continue
        value = math.prod(rates_kept) * start.double()
        for s, theta in enumerate(thetas):
            kept_after = math.prod(rates_kept[s + 1:])
            value = value + (1 - rates_kept[s]) * kept_after * theta[key].double()
        expected[key] = value
    return expected


def ema_is_its_closed_form(script):
    """After each of three steps, for the default --ema-decay (the warm-up's (1 + s) / (10 + s)
    is the smaller) and for --ema-decay 0.05: the EMA, and the network the evaluation draws with."""
    for flags, most in (((), 0.999), (("--ema-decay", "0.05"), 0.05)):
        run = trained(script, "--steps", "3", "--warm-up-steps", "1", "--lr", "1e-2", *flags)
        thetas = [state["model"] for state in run.checkpoints]
        assert states_differ(thetas[-1], run.initial)                        # the network moved
        for k, state in enumerate(run.checkpoints, 1):
            decays = [min(most, (1 + s) / (10 + s)) for s in range(k)]
            for key, value in closed_form(run.initial, thetas[:k], decays).items():
                ema = state["ema"][key].double()
                assert torch.allclose(ema, value, atol=1e-6), (script, k, key)
            step, evaluated = run.evaluations[k - 1]
            assert step == k and not states_differ(evaluated, state["ema"]), (script, k)


def test_maskgit_ema_decay_and_its_warm_up_give_the_closed_form_ema():
    ema_is_its_closed_form("maskgit")


def test_jepa_maskgit_ema_decay_and_its_warm_up_give_the_closed_form_ema():
    ema_is_its_closed_form("jepa_maskgit")


def test_givt_ema_decay_and_its_warm_up_give_the_closed_form_ema():
    ema_is_its_closed_form("givt")


def test_mar_ema_decay_and_its_warm_up_give_the_closed_form_ema():
    ema_is_its_closed_form("mar")


def test_dit_ema_decay_and_its_warm_up_give_the_closed_form_ema():
    ema_is_its_closed_form("dit")


def test_ar_ema_decay_and_its_warm_up_give_the_closed_form_ema():
    ema_is_its_closed_form("ar")


def test_jepa_maskgit_jepa_momentum_makes_the_target_its_closed_form():
    """The target follows the context model with m_s = start + (1 - start) s / S: after three
    steps of --jepa-momentum 0.5, m = 0.5, 2/3, 5/6; it is never what an evaluation draws with."""
    run = trained("jepa_maskgit", "--steps", "3", "--warm-up-steps", "1", "--lr", "1e-2",
                  "--jepa-momentum", "0.5")
    thetas = [state["model"] for state in run.checkpoints]
    for k, state in enumerate(run.checkpoints, 1):
        momenta = [0.5 + 0.5 * s / 3 for s in range(k)]
        for key, value in closed_form(run.initial, thetas[:k], momenta).items():
            assert torch.allclose(state["target"][key].double(), value, atol=1e-6), (k, key)
        assert states_differ(run.evaluations[k - 1][1], state["target"])


# -------------------------------------------------------- the backbone flags, in every generator
def backbone_is_shaped_by(script):
    """--width, --depth and --heads build the network: its blocks, their width and heads."""
    shaped = config(script, "--width", "24", "--depth", "2", "--heads", "3")
    model, _ = MODULES[script].build(shaped)
    attention = model.blocks[0].attention
    assert (len(model.blocks), attention.embed_dim, attention.num_heads) == (2, 24, 3), script


def test_maskgit_width_depth_heads_shape_the_network():
    for script in MASKGITS:
        backbone_is_shaped_by(script)


def test_givt_width_depth_heads_shape_the_network():
    backbone_is_shaped_by("givt")


def test_mar_width_depth_heads_shape_the_network():
    backbone_is_shaped_by("mar")


def test_dit_width_depth_heads_shape_the_network():
    backbone_is_shaped_by("dit")


def test_ar_width_depth_heads_shape_the_network():
    backbone_is_shaped_by("ar")


def tokenizer_is_chosen_by_the_flag(script, *flags):
    """--tokenizer pca: 16 values a token, read by the network's first layer."""
    model, tokenizer = MODULES[script].build(config(script, *flags, "--tokenizer", "pca"))
    assert tokenizer.name == "pca" and model.embed.in_features == 16, script


def test_givt_tokenizer_chooses_the_tokens():
    tokenizer_is_chosen_by_the_flag("givt")


def test_mar_tokenizer_chooses_the_tokens():
    tokenizer_is_chosen_by_the_flag("mar")


def test_dit_tokenizer_chooses_the_tokens():
    tokenizer_is_chosen_by_the_flag("dit")


def test_ar_tokenizer_chooses_the_mixture_heads_tokens():
    tokenizer_is_chosen_by_the_flag("ar", "--head", "gmm")


def decoding_steps_are(script, flag, steps, *flags):
    model, _ = network(script)
    return calls(model, lambda: drawn(script, flag, steps, *flags, model=network(script)))


# ------------------------------------------------------------------- maskgit.py (and jepa's)
def test_maskgit_sample_steps_sets_the_number_of_decoding_steps():
    for script in MASKGITS:
        assert decoding_steps_are(script, "--sample-steps", 4) == 4, script


def hidden_after_the_first_decoding_step(script, *flags):
    """How many ids (or tokens) each image still hides when the network is called a second time."""
    model, _ = network(script)
    seen = []
    hook = model.register_forward_pre_hook(lambda module, args: seen.append(args[:2]))
    try:
        drawn(script, "--sample-steps", "2", *flags, model=network(script))
    finally:
        hook.remove()
    second = seen[1]
    hidden = second[0] == model.mask_id if script in MASKGITS else second[1]
    return hidden.sum(1).tolist()


def test_maskgit_mask_schedule_reaches_decoding_and_training():
    """Decoding: two steps hide gamma(1/2) T after the first, 32 (linear) or 45 (cosine) of 64.
    Training: the masks it draws, and so the second step's loss, follow the schedule."""
    for script in MASKGITS:
        linear = hidden_after_the_first_decoding_step(script, "--mask-schedule", "linear")
        assert set(linear) == {32}
        assert set(hidden_after_the_first_decoding_step(script)) == {45}
    linear = trained("maskgit", *MOVING, "--mask-schedule", "linear")
    cosine = trained("maskgit", *MOVING)
    assert linear.losses[1] != cosine.losses[1]


def test_maskgit_unmask_chooses_the_order_of_decoding():
    for script in MASKGITS:
        assert not np.array_equal(drawn(script, "--unmask", "random"), drawn(script)), script


def test_maskgit_choice_temperature_sets_the_noise_on_the_confidence():
    for script in MASKGITS:
        assert not np.array_equal(drawn(script, "--choice-temperature", "0"), drawn(script)), script


def test_maskgit_factored_builds_the_two_part_head():
    model, codebook = MODULES["maskgit_factored"].build(config("maskgit_factored"))
    assert model.head.out_features == codebook.n_masks + codebook.n_colors
    model, codebook = MODULES["maskgit"].build(config("maskgit"))
    assert model.head.out_features == codebook.vocab_size


# ------------------------------------------------------------------------- jepa_maskgit.py
def test_jepa_maskgit_jepa_layers_chooses_the_predicted_blocks():
    first, second = (trained("jepa_maskgit", *MOVING, "--depth", "4", "--jepa-layers", layer)
                     for layer in ("0", "1"))
    assert first.losses != second.losses


def test_jepa_maskgit_jepa_weight_weighs_the_latent_loss():
    """Weight 0: MaskGIT's training, step for step; the default 0.6 adds the JEPA loss."""
    nothing = trained("jepa_maskgit", *MOVING, "--jepa-weight", "0")
    assert nothing.losses == trained("maskgit", *MOVING).losses
    assert trained("jepa_maskgit", *MOVING).losses[0] > nothing.losses[0]


def test_jepa_maskgit_mask_schedule_reaches_its_training():
    linear = trained("jepa_maskgit", *MOVING, "--mask-schedule", "linear")
    assert linear.losses != trained("jepa_maskgit", *MOVING).losses


# ----------------------------------------------------------------------------------- givt.py
def test_givt_components_sets_the_size_of_each_mixture():
    model, tokenizer = MODULES["givt"].build(config("givt", "--components", "3"))
    assert model.head.out_features == 3 * (1 + 2 * tokenizer.dim)


def test_givt_sample_steps_sets_the_number_of_decoding_steps():
    assert decoding_steps_are("givt", "--sample-steps", 4) == 4


def test_givt_mask_schedule_reaches_decoding_and_training():
    assert set(hidden_after_the_first_decoding_step("givt", "--mask-schedule", "linear")) == {32}
    assert set(hidden_after_the_first_decoding_step("givt")) == {45}
    linear = trained("givt", *MOVING, "--mask-schedule", "linear")
    assert linear.losses != trained("givt", *MOVING).losses


def test_givt_unmask_chooses_the_order_of_decoding():
    assert not np.array_equal(drawn("givt", "--unmask", "confidence"), drawn("givt"))


def test_givt_temperature_scales_the_draws():
    assert not np.array_equal(drawn("givt", "--temperature", "0.5"), drawn("givt"))


def test_givt_mixture_temperature_sharpens_the_choice_of_component():
    assert not np.array_equal(drawn("givt", "--mixture-temperature", "0"), drawn("givt"))


def test_givt_choice_temperature_sets_the_noise_on_the_confidence():
    confident = ("--unmask", "confidence")              # the default, random order, has no noise
    assert not np.array_equal(drawn("givt", *confident, "--choice-temperature", "0"),
                              drawn("givt", *confident))


# ------------------------------------------------------------------------------------ mar.py
def test_mar_sample_steps_sets_the_number_of_decoding_steps():
    assert decoding_steps_are("mar", "--sample-steps", 3) == 3


def test_mar_mask_schedule_reaches_decoding_and_training():
    assert set(hidden_after_the_first_decoding_step("mar", "--mask-schedule", "linear")) == {32}
    assert set(hidden_after_the_first_decoding_step("mar")) == {45}
    linear = trained("mar", *MOVING, "--mask-schedule", "linear")
    assert linear.losses != trained("mar", *MOVING).losses


def test_mar_diffusion_steps_sets_the_denoising_steps_of_each_token():
    """Two decoding steps, each running the per-token denoiser --diffusion-steps times."""
    model, _ = network("mar")
    denoised = lambda: drawn("mar", "--diffusion-steps", "3", model=network("mar"))  # noqa: E731
    assert calls(model.diffusion, denoised) == 6


def test_mar_draws_sets_the_noise_draws_per_token():
    assert trained("mar", *MOVING, "--draws", "1").losses != trained("mar", *MOVING).losses


def test_mar_temperature_scales_the_denoisers_noise():
    assert not np.array_equal(drawn("mar", "--temperature", "0.5"), drawn("mar"))


def test_mar_time_dist_chooses_the_training_times():
    uniform = trained("mar", *MOVING, "--time-dist", "uniform")
    assert uniform.losses != trained("mar", *MOVING).losses


# ------------------------------------------------------------------------------------ dit.py
def test_dit_sample_steps_sets_the_number_of_euler_steps():
    assert decoding_steps_are("dit", "--sample-steps", 4) == 4


def test_dit_time_dist_chooses_the_training_times():
    assert trained("dit", "--time-dist", "uniform").losses != trained("dit").losses


# ------------------------------------------------------------------------------------- ar.py
def test_ar_head_chooses_the_objective():
    categorical, codebook = MODULES["ar"].build(config("ar"))
    gmm, pixels = MODULES["ar"].build(config("ar", "--head", "gmm"))
    assert categorical.categorical and categorical.head.out_features == codebook.vocab_size
    assert not gmm.categorical and pixels.name == "pixels"


def test_ar_components_sets_the_size_of_each_mixture():
    model, tokenizer = MODULES["ar"].build(config("ar", "--head", "gmm", "--components", "3"))
    assert model.head.out_features == 3 * (1 + 2 * tokenizer.dim)


def test_ar_temperature_scales_the_draws():
    assert not np.array_equal(drawn("ar", "--temperature", "0.5"), drawn("ar"))


# ------------------------------------------------------------------ the rule, held mechanically
def test_every_flag_of_every_script_has_a_row():
    """tests/mutations.py's rule: every flag of every script that trains (the six generators and
    objects.py) is guarded by a row, a row whose guarding test is named for the flag:
    test_common_<flag>_... for the common flags, test_<script>_<flag>_... for a script's own
    (maskgit.py's tests for the flags jepa_maskgit.py takes from it; test_<script>_width_depth_
    heads_... for the three of the backbone). objects.py's are in tests/test_objects_kinds.py."""
    from mutations import MUTATIONS
    guards = [guard.split("::")[1] for row in MUTATIONS for guard in row[3]]
    missing = []
    for script in runs.MODELS:
        parser, _ = runs.script(script).parse([])
        names = "|".join([script, "common"] + (["maskgit"] if script in MASKGITS else []))
        for action in parser._actions:
            if not action.option_strings or action.dest == "help":
                continue
            named = re.compile(rf"^test_({names})_((width|depth|heads)_)*{action.dest}_")
            if not any(named.match(guard) for guard in guards):
                missing.append(f"{script} {action.option_strings[0]}")
    assert not missing, f"flags without a row: {', '.join(missing)}"
