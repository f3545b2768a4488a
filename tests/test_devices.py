"""Every tensor a model sees is made on the model's device, and the heads are fp32 whatever the
autocast: checked on a CPU-only machine on a simulated device (tests/elsewhere.py: a tensor that
mixes with a CPU tensor, or a draw by the wrong side's generator, fails as on a GPU), and by a
short run of every generator on each accelerator present (skipped where there is none).

On the simulated device every script trains, evaluates and checkpoints (train(config) with
config["device"] = "meta"); the sampler copies nothing to it at all (its random draws are made
there); and a training step makes the host wait for the device at most once, counting every wait
a CUDA GPU would make (a number read, a copy either way, a boolean mask's nonzero: the
`waits` of tests/elsewhere.py). A failure lists each wait of the step and the line that asked."""
import collections
import itertools
import json
import math
import os

import elsewhere
import numpy as np
import pytest
import scripts
import torch

import data
import runs

SHAPES2D = ["--train-per-comp", "10"]                            # objects.py has no training set
TINY = ["--samples-per-comp", "1", "--batch-size", "4", "--width", "32", "--depth", "1",
        "--heads", "2"]
FEW = {"maskgit.py": ["--sample-steps", "2"], "givt.py": ["--sample-steps", "2"],   # sampling steps
       "jepa_maskgit.py": ["--sample-steps", "2", "--jepa-layers", "0"],
       "mar.py": ["--sample-steps", "2", "--diffusion-steps", "2"],
       "dit.py": ["--sample-steps", "2"], "ar.py": [], "objects.py": ["--sample-steps", "2"]}
ACCELERATORS = [pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                               reason="no cuda here")),
                pytest.param("mps", marks=pytest.mark.skipif(
                    not (getattr(torch.backends, "mps", None)
                         and torch.backends.mps.is_available()),
                    reason="no mps here"))]


# ------------------------------------------------------------- training on another device
def config_elsewhere(script, out, steps, *flags):
    """The script's config for a run of `steps` steps, evaluated once at the end, on ELSEWHERE."""
    module = scripts.module_of(script)
    flags = [*TINY, *FEW[script], *(SHAPES2D if script != "objects.py" else []), *flags]
    _, args = module.parse([*flags, "--steps", str(steps), "--eval-every", str(steps),
                            "--out", str(out)])
    config = dict(vars(args), model=module.NAME, device=str(elsewhere.ELSEWHERE))
    os.makedirs(out)
    runs.start_clock(config)
    return module, config


STEP_WAITS = {}    # (script, flags) -> each counted step's waits: one training, read by two tests


def trains_elsewhere(script, tmp_path, *flags, steps=4):
    """Train, evaluate (at the last step) and checkpoint on ELSEWHERE, keeping the waits of each
    whole step between one step's learning rate and the next's (no evaluation in it), from the
    second step on (the first may make what is made once)."""
    module, config = config_elsewhere(script, tmp_path / "run", steps, *flags)
    marks, sampled, learning_rate, draw = [], [], runs.learning_rate, module.draw

    def marked(config, step):
        if not marks or marks[-1][0] != step:                         # once a step, every group
            marks.append((step, len(elsewhere.waits)))
        return learning_rate(config, step)

    def counted(*args):
        before = elsewhere.crossings["to the device"]
        images = draw(*args)
        sampled.append(elsewhere.crossings["to the device"] - before)
        return images
    with pytest.MonkeyPatch.context() as patch, elsewhere.elsewhere():
        patch.setattr(runs, "learning_rate", marked)
        patch.setattr(module, "draw", counted)
        module.train(config)
    STEP_WAITS[(script, flags)] = [elsewhere.waits[before:after] for (_, before), (_, after)
                                   in itertools.pairwise(marks[1:])]
    assert len(STEP_WAITS[(script, flags)]) == steps - 2
    assert sampled == [0], sampled                          # the sampler's draws: made there
    assert [m["step"] for m in runs.read_metrics(config["out"])] == [steps]
    assert torch.load(tmp_path / "run" / "ckpt.pt", weights_only=True)["step"] == steps


def waits_at_most_once_a_step(script, tmp_path, *flags):
    """Each counted step of the script's training on ELSEWHERE waits for the device at most once
    (the training trained by its other test where this session ran it, else here)."""
    if (script, flags) not in STEP_WAITS:
        trains_elsewhere(script, tmp_path, *flags)
    for waits in STEP_WAITS[(script, flags)]:
        listed = "".join(f"\n  {n}x {what} at {where}"
                         for (what, where), n in collections.Counter(waits).items())
        assert len(waits) <= 1, (f"{' '.join([script, *flags])} waits {len(waits)} times in a "
                                 f"training step, at most 1 allowed:{listed}")


def test_maskgit_trains_evaluates_and_checkpoints_on_another_device(tmp_path):
    trains_elsewhere("maskgit.py", tmp_path)


def test_jepa_maskgit_trains_evaluates_and_checkpoints_on_another_device(tmp_path):
    trains_elsewhere("jepa_maskgit.py", tmp_path)


def test_givt_trains_evaluates_and_checkpoints_on_another_device(tmp_path):
    trains_elsewhere("givt.py", tmp_path)


def test_mar_trains_evaluates_and_checkpoints_on_another_device(tmp_path):
    trains_elsewhere("mar.py", tmp_path)


def test_dit_trains_evaluates_and_checkpoints_on_another_device(tmp_path):
    trains_elsewhere("dit.py", tmp_path)


def test_ar_trains_evaluates_and_checkpoints_on_another_device(tmp_path):
    trains_elsewhere("ar.py", tmp_path)


def test_ar_gmm_head_trains_evaluates_and_checkpoints_on_another_device(tmp_path):
    trains_elsewhere("ar.py", tmp_path, "--head", "gmm")


def test_objects_trains_evaluates_and_checkpoints_on_another_device(tmp_path):
    trains_elsewhere("objects.py", tmp_path)


def test_maskgit_waits_for_the_device_at_most_once_a_training_step(tmp_path):
    waits_at_most_once_a_step("maskgit.py", tmp_path)


def test_jepa_maskgit_waits_for_the_device_at_most_once_a_training_step(tmp_path):
    waits_at_most_once_a_step("jepa_maskgit.py", tmp_path)


def test_givt_waits_for_the_device_at_most_once_a_training_step(tmp_path):
    waits_at_most_once_a_step("givt.py", tmp_path)


def test_mar_waits_for_the_device_at_most_once_a_training_step(tmp_path):
    waits_at_most_once_a_step("mar.py", tmp_path)


def test_dit_waits_for_the_device_at_most_once_a_training_step(tmp_path):
    waits_at_most_once_a_step("dit.py", tmp_path)


def test_ar_waits_for_the_device_at_most_once_a_training_step(tmp_path):
    waits_at_most_once_a_step("ar.py", tmp_path)


def test_ar_gmm_head_waits_for_the_device_at_most_once_a_training_step(tmp_path):
    waits_at_most_once_a_step("ar.py", tmp_path, "--head", "gmm")


def test_objects_waits_for_the_device_at_most_once_a_training_step(tmp_path):
    waits_at_most_once_a_step("objects.py", tmp_path)


@pytest.mark.parametrize("script", ["maskgit.py", "mar.py"])         # ids; vectors and a denoiser
def test_inside_reads_a_run_on_another_device(script, tmp_path, monkeypatch):
    from studies import inside
    run = tmp_path / "run"
    scripts.main(script, *scripts.ONCE, *TINY[2:], *FEW[script], "--out", run)   # on the CPU
    probe = inside.linear_probe            # the layer probes learn on the CPU: a few steps will do
    monkeypatch.setattr(inside, "linear_probe", lambda *a: probe(*a, steps=3))
    with elsewhere.elsewhere():
        found = inside.read(str(run), per_code=1, images_per_code=1, device=elsewhere.ELSEWHERE)
    assert found["model"] == script[:-3] and found["reach"] and found["readout"]


def test_a_cpu_generator_cannot_draw_for_the_device_nor_a_cpu_tensor_mix_with_its():
    """The simulation fails where a GPU fails, so that passing on it means something."""
    with elsewhere.elsewhere() as device:
        x = torch.zeros(3, device=device)
        with pytest.raises(RuntimeError, match="same device"):
            x + torch.ones(3)
        with pytest.raises(RuntimeError, match="generator of cpu"):
            torch.rand(3, generator=torch.Generator().manual_seed(0), device=device)
        with pytest.raises(RuntimeError, match="generator of meta"):
            torch.rand(3, generator=torch.Generator(device).manual_seed(0))
        assert float((x + 1).sum()) == 3 and elsewhere.crossings["to the host"] == 1


def test_the_simulated_device_counts_every_wait_a_cuda_gpu_makes():
    """Each wait once, named, at the line that asked; what a GPU does without the host, never."""
    def waits_of(operation):
        before = len(elsewhere.waits)
        operation()
        return [what for what, _ in elsewhere.waits[before:]]
    with elsewhere.elsewhere() as device:
        x = torch.randn(4, 3, device=device, requires_grad=True)
        mask = torch.rand(4, 3, device=device) < 0.5
        assert waits_of(lambda: x[mask].sum().backward()) == [
            "boolean-mask index (a nonzero)", "boolean-mask index_put (a nonzero)"]
        _, where = elsewhere.waits[-1]
        assert where.startswith("tests/test_devices.py:") and "IndexBackward0" in where
        y = x.detach()
        assert waits_of(lambda: y.nonzero()) == ["nonzero"]
        assert waits_of(lambda: torch.where(mask)) == ["nonzero"]
        assert waits_of(lambda: y.masked_select(mask)) == ["masked_select"]
        assert waits_of(lambda: y.unique()) == ["unique"]
        number = "a number read (.item(), float(), int(), bool())"
        assert waits_of(lambda: (y.sum().item(), float(y[0, 0]), bool(mask[0, 0]))) == [number] * 3
        assert waits_of(lambda: y.tolist()) == [".tolist()"]
        assert waits_of(lambda: y.cpu()) == ["a copy to the host"]
        pageable = "a copy to the device (pageable memory)"
        assert waits_of(lambda: torch.ones(3).to(device)) == [pageable]
        assert waits_of(lambda: torch.tensor([1.0, 2.0], device=device)) == [pageable]
        repeats = torch.ones(3, dtype=torch.long, device=device)
        assert waits_of(lambda: torch.arange(3, device=device).repeat_interleave(repeats)) == [
            "repeat_interleave (no output_size)"]
        assert waits_of(lambda: (                  # no wait: the device works on without the host
            y.masked_fill(mask, 0), y.masked_scatter(mask, y), y[torch.arange(2, device=device)],
            y.__setitem__(mask, 1.0), torch.randint(9, (3,), device=device), y.sum() > 0,
            torch.arange(3, device=device).repeat_interleave(repeats, output_size=3),
            y.repeat_interleave(2, 0), torch.full((2,), 0.5, device=device))) == []


def test_a_run_resumes_only_on_the_device_it_trained_on(tmp_path, capsys):
    """Its random state is a generator of that device: elsewhere it cannot continue exactly."""
    import dit
    out = tmp_path / "run"
    config = dict(vars(dit.parse(["--out", str(out)])[1]), model="dit", device="cuda")
    runs.save_atomic(dict(config=config, step=4), str(out / "ckpt.pt"))
    code, said = scripts.refused(dit, ["--out", str(out), "--resume", "--device", "cpu"], capsys)
    assert code == 1 and "was trained on cuda; resume it there (--device cuda)" in said, said


# ------------------------------------------------------------------------------ precision
def test_the_precision_rule(monkeypatch):
    assert runs.half_precision("cpu") is None and runs.half_precision("mps") is None
    assert not runs.grad_scaler("cpu").is_enabled() and not runs.grad_scaler("mps").is_enabled()
    for autocast in (runs.autocast("cpu"), runs.autocast("mps")):
        with autocast:
            assert not torch.is_autocast_enabled("cpu")
    for capability, bf16, expected in (((9, 0), True, torch.bfloat16),
                                       ((8, 0), True, torch.bfloat16),
                                       ((7, 5), True, torch.float16),
                                       ((7, 0), False, torch.float16)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None, c=capability: c)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, b=bf16, **k: b)
        assert runs.half_precision("cuda") == expected, capability   # T4 (7.5) emulates bf16: fp16


def test_dit_trains_in_fp16_with_a_grad_scaler_that_skips_an_overflowing_step(tmp_path):
    """A T4's path (compute capability 7.5: fp16 and the grad scaler) on the simulated device:
    the blocks compute in fp16, the head in fp32; a step whose gradients overflow (made so at the
    second step, the loss itself finite) changes no parameter and halves the scale, and the
    others train."""
    module, config = config_elsewhere("dit.py", tmp_path / "run", 4)
    marks, snapshots, dtypes, models = [], [], collections.defaultdict(set), []
    learning_rate, build, flow_loss = runs.learning_rate, module.build, module.flow_loss

    def built(config):
        model, tokenizer = build(config)
        model.blocks[0].mlp.register_forward_hook(lambda m, i, out: dtypes["mlp"].add(out.dtype))
        model.head.register_forward_hook(lambda m, i, out: dtypes["head"].add(out.dtype))
        models.append(model)
        return model, tokenizer

    def marked(config, step):                  # the parameters as the step found them
        if not marks or marks[-1] != step:
            marks.append(step)
            snapshots.append([p.detach().held.clone() for p in models[0].parameters()])
        return learning_rate(config, step)

    def overflowing(*args, **kwargs):
        loss = flow_loss(*args, **kwargs)
        if marks[-1] == 1:
            loss.register_hook(lambda gradient: gradient * math.inf)
        return loss
    with pytest.MonkeyPatch.context() as patch, elsewhere.elsewhere(capability=(7, 5)) as device:
        assert runs.half_precision(device) == torch.float16
        assert runs.grad_scaler(device).is_enabled()
        patch.setattr(runs, "learning_rate", marked)
        patch.setattr(module, "build", built)
        patch.setattr(module, "flow_loss", overflowing)
        module.train(config)
    assert dtypes == {"mlp": {torch.float16}, "head": {torch.float32}}
    changed = [any(not torch.equal(a, b) for a, b in zip(before, after))
               for before, after in itertools.pairwise(snapshots)]
    assert changed == [True, False, True]                      # steps 0 and 2 trained, 1 skipped
    saved = torch.load(tmp_path / "run" / "ckpt.pt", weights_only=True)
    assert (saved["scaler"]["scale"], saved["scaler"]["_growth_tracker"]) == (2.0 ** 15, 2)
    assert {float(state["step"]) for state in saved["optimizer"]["state"].values()} == {3.0}
    assert math.isfinite(runs.read_metrics(config["out"])[-1]["loss"])


def test_full_precision_turns_an_autocast_off():
    x, layer = torch.randn(2, 8), torch.nn.Linear(8, 4)
    with torch.autocast("cpu", torch.bfloat16):
        assert layer(x).dtype == torch.bfloat16
        with runs.full_precision("cpu"):
            assert layer(x).dtype == torch.float32


def under_autocast(function, *args):
    """function(*args) under CPU bf16 autocast, as a GPU's loop runs it."""
    with torch.autocast("cpu", torch.bfloat16), torch.no_grad():
        return function(*args)


def condition(n):
    latents = data.sample_latents(np.repeat([[0, 1, 1]], n, 0), np.random.default_rng(0))
    return data.conditioning(latents, "continuous", train=False)


def built(script, *flags):
    module = scripts.module_of(script)
    _, args = module.parse([*flags, "--width", "32", "--depth", "1", "--heads", "2"])
    model, tokenizer = module.build(vars(args))
    return module, vars(args), model.eval(), tokenizer


def all_fp32(*tensors):
    return all(t.dtype == torch.float32 for t in tensors)


def test_maskgit_head_and_loss_are_fp32_under_autocast():
    import maskgit
    for script in ("maskgit.py", "maskgit_factored.py"):
        _, _, model, _ = built(script)
        module = maskgit                                     # the loss: maskgit.py's, for both
        ids, (values, present) = torch.randint(model.mask_id, (2, 64)), condition(2)
        g = torch.Generator().manual_seed(0)
        assert under_autocast(model, ids, values, present).dtype == torch.float32
        loss = under_autocast(module.masked_loss, model, ids, values, present, g)
        assert loss.dtype == torch.float32


def test_jepa_maskgit_losses_are_fp32_under_autocast():
    module, _, model, _ = built("jepa_maskgit.py", "--jepa-layers", "0")
    predictors = module.make_predictors(32, [0])
    ids, (values, present) = torch.randint(model.mask_id, (2, 64)), condition(2)
    g = torch.Generator().manual_seed(0)
    losses = under_autocast(module.jepa_losses, model, model, predictors, ids, values, present, g,
                            [0])
    assert all_fp32(*losses)


def test_givt_mixture_and_loss_are_fp32_under_autocast():
    module, _, model, _ = built("givt.py")
    x, (values, present) = torch.randn(2, 64, 48), condition(2)
    hidden = torch.rand(2, 64) < 0.5
    assert all_fp32(*under_autocast(model, x, hidden, values, present))
    loss = under_autocast(module.masked_loss, model, x, values, present,
                          torch.Generator().manual_seed(0))
    assert all_fp32(loss)


def test_mar_per_token_head_and_loss_are_fp32_under_autocast():
    module, _, model, _ = built("mar.py")
    x, (values, present) = torch.randn(2, 64, 48), condition(2)
    z = under_autocast(model, x, torch.ones(2, 64, dtype=torch.bool), values, present)
    eps_hat = under_autocast(model.diffusion, x[:, 0], torch.full((2,), 0.5), z[:, 0])
    loss = under_autocast(module.masked_loss, model, x, values, present,
                          torch.Generator().manual_seed(0))
    assert all_fp32(eps_hat, loss)


def test_dit_x0_and_loss_are_fp32_under_autocast():
    module, _, model, _ = built("dit.py")
    x, (values, present) = torch.randn(2, 64, 48), condition(2)
    assert all_fp32(under_autocast(model, x, torch.full((2,), 0.5), values, present))
    loss = under_autocast(module.flow_loss, model, x, values, present,
                          torch.Generator().manual_seed(0))
    assert all_fp32(loss)


def test_ar_heads_and_losses_are_fp32_under_autocast():
    for flags, tokens in ((["--head", "categorical"], torch.randint(2048, (2, 64))),
                          (["--head", "gmm"], torch.randn(2, 64, 48))):
        module, _, model, _ = built("ar.py", *flags)
        values, present = condition(2)
        out = under_autocast(model, tokens[:, :-1], values, present)
        assert all_fp32(*(out if isinstance(out, tuple) else [out]))
        assert all_fp32(under_autocast(module.next_token_loss, model, tokens, values, present))


def test_objects_x0_is_fp32_under_autocast():
    module, _, model, _ = built("objects.py")
    points, present = module.padded([np.array([[8.0, 8.0]], np.float32)] * 2)
    x = torch.randn(2, 64, 48)
    assert all_fp32(under_autocast(model, x, torch.full((2,), 0.5), points, present))


# ------------------------------------------------------------------- each accelerator present
def runs_on(script, device, tmp_path):
    """A short run of the script's own command on device: it trains, evaluates, checkpoints."""
    flags = [*scripts.ONCE, "--device", device, "--out", tmp_path / "run"]
    if script == "objects.py":
        flags = [f for f in flags if f not in ("--train-per-comp", "100")]
    scripts.main(script, *flags)
    with open(tmp_path / "run" / "config.json") as f:
        config = json.load(f)
    assert config["device"] == device and runs.read_metrics(tmp_path / "run")[-1]["step"] == 4


@pytest.mark.parametrize("device", ACCELERATORS)
def test_maskgit_runs_on_each_accelerator_present(device, tmp_path):
    runs_on("maskgit.py", device, tmp_path)


@pytest.mark.parametrize("device", ACCELERATORS)
def test_jepa_maskgit_runs_on_each_accelerator_present(device, tmp_path):
    runs_on("jepa_maskgit.py", device, tmp_path)


@pytest.mark.parametrize("device", ACCELERATORS)
def test_givt_runs_on_each_accelerator_present(device, tmp_path):
    runs_on("givt.py", device, tmp_path)


@pytest.mark.parametrize("device", ACCELERATORS)
def test_mar_runs_on_each_accelerator_present(device, tmp_path):
    runs_on("mar.py", device, tmp_path)


@pytest.mark.parametrize("device", ACCELERATORS)
def test_dit_runs_on_each_accelerator_present(device, tmp_path):
    runs_on("dit.py", device, tmp_path)


@pytest.mark.parametrize("device", ACCELERATORS)
def test_ar_runs_on_each_accelerator_present(device, tmp_path):
    runs_on("ar.py", device, tmp_path)


@pytest.mark.parametrize("device", ACCELERATORS)
def test_objects_runs_on_each_accelerator_present(device, tmp_path):
    runs_on("objects.py", device, tmp_path)


@pytest.fixture
def small_readers(monkeypatch):
    """The many-valued world's readers and codebook fitted on few images (their caches are keyed
    by those sizes), so that a run of it evaluates cheaply."""
    from worlds import shapes3d
    monkeypatch.setattr(shapes3d, "PROBE_PER_CODE", 3)
    monkeypatch.setattr(shapes3d, "HELD_OUT_PER_CODE", 1)
    monkeypatch.setattr(shapes3d, "TOKENIZERS", {"codebook": dict(n_masks=32, n_colors=10,
                                                                  normalize=True, per_code=1)})


@pytest.mark.parametrize("script", ["dit.py", "maskgit.py"])
def test_a_run_in_the_many_valued_world_waits_for_the_device_at_most_once_a_step(
        script, tmp_path, small_readers):
    waits_at_most_once_a_step(script, tmp_path, "--world", "shapes3d")
