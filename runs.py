"""The run plumbing every generator shares: flags, the run folder, evaluations, checkpoints,
metrics.jsonl and the pictures. Nothing here is a method; the judge is judge.py.

A generator calls, in order:
    runs.add_common_arguments(parser, NAME, DEFAULTS)   # the contract's flags, at DEFAULTS
    config = runs.start_run(parser, args, NAME)
    runs.run(NAME, config, train)        # train() calls runs.draw_and_read() at each evaluation

Sections, in call order: arguments -> start -> run -> precision -> the learning rate ->
checkpoints -> evaluation and record -> pictures.
"""
import argparse
import contextlib
import importlib
import itertools
import json
import math
import os
import pickle
import platform
import subprocess
import time

import numpy as np
import torch
from tqdm import tqdm

import data
import judge
import worlds

GENERATORS = ("maskgit", "jepa_maskgit", "givt", "mar", "dit", "ar",   # they train on Shapes2D
              "maskgit_factored")
MODELS = GENERATORS + ("objects",)    # and objects.py, dit.py's method in the world of many objects
STUDIES = ("ar", "maskgit_factored", "objects")      # the further questions' scripts: studies/
SPLIT_COLORS = {"seen": "tab:blue", "level1": "hotpink", "level2": "red"}


# ------------------------------------------------------------------------------ arguments
class Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """--help as the docstring wrote it, every flag with its default: what config.json records."""


def add_common_arguments(parser, name, defaults, shapes2d=True):
    """The flags of the contract, the same in every generator, each at its value in the script's
    own block (DEFAULTS). What no flag changes (AdamW's betas, the clipping norm) goes into the
    config as it is, so that config.json holds every value a run trains with. shapes2d=False
    (objects.py, another world) leaves out the flags of Shapes2D's condition and training set."""
    parser.add_argument("--steps", type=int, default=defaults["steps"], help="training steps")
    parser.add_argument("--batch-size", type=int, default=defaults["batch_size"],
                        help="images per training step")
    parser.add_argument("--lr", type=float, default=defaults["lr"], help="peak AdamW learning rate")
    parser.add_argument("--warm-up-steps", type=int, default=defaults["warm_up_steps"],
                        help="the learning rate rises linearly to --lr over these first steps")
    # the ladder's backbone, the same in every generator
    parser.add_argument("--width", type=int, default=defaults["width"], help="channels per token")
    parser.add_argument("--depth", type=int, default=defaults["depth"], help="transformer blocks")
    parser.add_argument("--heads", type=int, default=defaults["heads"], help="attention heads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "mps", "cpu"))
    if shapes2d:
        parser.add_argument("--world", default=defaults["world"], choices=worlds.WORLDS,
                            help="what the images show: data.py's Shapes2D or a world beside it "
                                 "(worlds/); a world may size --train-per-comp and "
                                 "--samples-per-comp otherwise (its RUN_DEFAULTS)")
        parser.add_argument("--seen-count", type=int, default=defaults["seen_count"],
                            metavar="N", help="learn from the first N of the world's seen codes "
                            "only (shapes3d.seen_order; default: all); the novel codes and the "
                            "training set's size stay")
        parser.add_argument("--cond", default=defaults["cond"], choices=data.COND_MODES)
        parser.add_argument("--cond-drop", type=float, default=defaults["cond_drop"],
                            help="hiding probability per factor")
    parser.add_argument("--eval-every", type=int, default=defaults["eval_every"],
                        help="first evaluation step; later ones each x1.41 (even in log step), and "
                             "the last step")
    parser.add_argument("--samples-per-comp", type=int, default=defaults["samples_per_comp"],
                        help="samples per composition (objects.py: per number of objects asked)")
    if shapes2d:
        parser.add_argument("--train-per-comp", type=int, default=defaults["train_per_comp"],
                            help="training images per seen composition")
        parser.add_argument("--data", default=defaults["data"], choices=data.DATA_KINDS,
                            help="fixed: --train-per-comp images rendered once; fresh: new "
                                 "images every step")
    parser.add_argument("--lr-schedule", default=defaults["lr_schedule"],
                        choices=("constant", "cosine"),
                        help="after the warm-up: hold --lr, or decay it to 0 at --steps (cosine: "
                             "the long-budget recipe; at 10,000 steps it holds DiT's 111 where "
                             "constant lets it fray: results/long-runs)")
    parser.add_argument("--weight-decay", type=float, default=defaults["weight_decay"],
                        help="AdamW's decoupled weight decay")
    parser.add_argument("--ema-decay", type=float, default=defaults["ema_decay"],
                        help="d of the evaluated network, ema <- d ema + (1 - d) model; "
                             "early steps use min(d, (1 + step) / (10 + step))")
    parser.set_defaults(adamw_betas=defaults["adamw_betas"], clip_norm=defaults["clip_norm"])
    parser.add_argument("--out", default=os.path.join("runs", name), help="run folder")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out")
    parser.add_argument("--keep-checkpoints", action="store_true",
                        help="also keep each evaluation's EMA network, checkpoints/step_N.pt "
                             "(for inside.py)")
    parser.add_argument("--compile", nargs="?", const="inductor", metavar="BACKEND",
                        help="torch.compile the network for long runs (the random draws stay "
                             "outside); checkpoints load without it")


def parse_args(parser, argv=None):
    """The flags, the defaults of what the chosen world sizes otherwise (RUN_DEFAULTS) first."""
    known, _ = parser.parse_known_args(argv)
    if "world" in vars(known):
        try:
            parser.set_defaults(**worlds.world(vars(known)).RUN_DEFAULTS)
        except ValueError as error:                      # a --seen-count the world cannot take
            parser.error(str(error))
    return parser.parse_args(argv)


def resolve_device(name):
    """'auto' -> cuda, then mps, then cpu; an explicit device must exist."""
    available = {"cpu": True, "cuda": torch.cuda.is_available(),
                 "mps": (getattr(torch.backends, "mps", None) is not None
                         and torch.backends.mps.is_available())}
    if name == "auto":
        return next(d for d in ("cuda", "mps", "cpu") if available[d])
    if not available.get(name, False):
        present = ", ".join(d for d, ok in available.items() if ok)
        raise SystemExit(f"error: --device {name} is not available here; present: "
                         f"{present} (or auto)")
    return name


def script(name):
    """The generator script of that name (maskgit, dit, ...),
    imported: its parse, build, draw, SAMPLING."""
    if name not in MODELS:
        raise SystemExit(f"error: {name!r} is not a generator of this repository; they are "
                         f"{', '.join(MODELS)}")
    return importlib.import_module(f"studies.{name}" if name in STUDIES else name)


def script_file(name):
    """The file of the generator script of that name, from the repository's top:
    'dit' -> 'dit.py', 'ar' -> 'studies/ar.py'."""
    return f"studies/{name}.py" if name in STUDIES else f"{name}.py"


# ---------------------------------------------------------------------------------- start
def start_run(parser, args, name):
    """Validate flags (check_values), pick the device, guard the run folder, write config.json."""
    check_values(parser, args)
    modes = worlds.world(vars(args)).COND_MODES
    if "world" in vars(args) and args.cond not in modes:
        parser.error(f"--cond {args.cond} does not apply to --world {args.world}; choose from "
                     f"{', '.join(modes)}")
    if args.eval_every > args.steps:
        parser.error(f"--eval-every {args.eval_every} is larger than --steps {args.steps}")
    args.device = resolve_device(args.device)
    checkpoint = os.path.join(args.out, "ckpt.pt")
    if args.resume and not os.path.exists(checkpoint):
        parser.error(f"--resume: no checkpoint at {checkpoint}")
    if not args.resume and os.path.exists(os.path.join(args.out, "metrics.jsonl")):
        parser.error(f"{args.out} already holds a run; pass --resume to continue it, or "
                     "--out NEW_FOLDER")
    config = dict(vars(args), model=name)
    if args.resume:                                      # refuse before config.json is touched
        check_resumable(args.out, name, config)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as error:
        parser.error(f"--out {args.out}: cannot make this folder ({error.strerror})")
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(dict(config, provenance=provenance(args.device)), f, indent=2)
    return config


def check_values(parser, args):
    """Refuse, naming the flag and its value: a rate that is not positive, a decay or a dropout
    outside [0, 1); a count (a flag whose default is a positive integer) that is not a positive
    integer; and a number whose default is >= 0 (a temperature, a weight) that is not one."""
    if not (args.lr > 0 and math.isfinite(args.lr)):
        parser.error(f"--lr must be a positive number, got {args.lr}")
    if not 0 <= args.ema_decay < 1:
        parser.error(f"--ema-decay must be in [0, 1), got {args.ema_decay}")
    if not 0 <= vars(args).get("cond_drop", 0) < 1:
        parser.error(f"--cond-drop must be in [0, 1), got {args.cond_drop}")
    for key, value in vars(args).items():
        default, flag = parser.get_default(key), f"--{key.replace('_', '-')}"
        if type(default) is int and default > 0 and value < 1:
            parser.error(f"{flag} must be a positive integer, got {value}")
        if type(default) is float and default >= 0 and not (value >= 0 and math.isfinite(value)):
            parser.error(f"{flag} must be a number >= 0, got {value}")


def provenance(device):
    """What a number depends on beyond the flags: the code's commit, the libraries, the threads and
    the hardware (two runs with the same flags can differ in the last bits across any of these)."""
    root = os.path.dirname(os.path.abspath(__file__))

    def git(*arguments):
        result = subprocess.run(["git", *arguments], cwd=root, capture_output=True, text=True)
        return result.stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        changes = git("status", "--porcelain", "--untracked-files=no")
    except OSError:                                      # no git here: say so rather than guess
        commit, changes = "unknown", ""
    cpu = platform.processor() or platform.machine()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), cpu)
    return dict(commit=commit or "unknown", uncommitted_changes=bool(changes),
                torch=torch.__version__, numpy=np.__version__, python=platform.python_version(),
                threads=torch.get_num_threads(), omp_num_threads=os.environ.get("OMP_NUM_THREADS"),
                cpu=cpu, cpu_count=os.cpu_count(),
                gpu=torch.cuda.get_device_name() if device == "cuda" else None)


def check_resumable(out, name, config):
    """A checkpoint is resumed only by its own script with the same settings (--steps may grow)."""
    saved = read_checkpoint(os.path.join(out, "ckpt.pt")).get("config", {})
    if saved.get("model") != name:
        raise SystemExit(f"error: {out}/ckpt.pt was written by {saved.get('model')!r}, "
                         f"not {name!r}")
    trained_on = saved.get("device", "cpu")              # its random state is a generator of there
    if trained_on != config["device"]:
        raise SystemExit(f"error: {out}/ckpt.pt was trained on {trained_on}; resume it there "
                         f"(--device {trained_on}), or start a new --out")
    free = ("device", "resume", "out", "steps", "keep_checkpoints", "clock", "compile")
    for key in [k for k in saved if k not in free and k in config]:
        if saved[key] != config[key]:
            raise SystemExit(f"error: {out}/ckpt.pt has {key}={saved[key]!r}, this run asks "
                             f"{config[key]!r}; use the same settings to resume, or a new --out")


# ------------------------------------------------------------------------------------ run
def run(name, config, train, closing=None):
    """Train, turn Ctrl-C into a hint on how to resume, and print the last evaluation's closing
    table (report's, or closing's)."""
    print(f"{name}: device {config['device']}, run folder {config['out']}")
    start_clock(config)
    try:
        train(config)
    except KeyboardInterrupt:
        raise SystemExit(f"\ninterrupted; the last evaluation's checkpoint is in {config['out']}: "
                         f"continue with --resume --out {config['out']}")
    last = read_metrics(config["out"])[-1]
    closing(last) if closing else report(last, worlds.world(config))


def start_clock(config, before=0.0):
    """The wall time metrics.jsonl records counts from now,
    plus `before` seconds (a resumed run's)."""
    config["clock"] = dict(start=time.time(), before=before)


def table_rows(world):
    """The rows of a world's tables: {name: codes}, its GROUPS, or a row per composition."""
    return getattr(world, "GROUPS", {code: (code,) for code in world.COMPOSITIONS})


def report(metrics, world=data):
    """The per-composition table (three readings; a world of many compositions: per group of its
    table) and the closing line of the contract."""
    if world is not data:
        groups = table_rows(world)
        wide = max(8, *map(len, groups))                      # clips.py's rows: "night-straight"
        print(f"{'group':<{wide}} {'codes':>5} {'composed':>8} {'fidelity':>8} {'probe':>6}")
        for name, codes in groups.items():
            print(f"{name:<{wide}} {len(codes):>5}" + "".join(
                f" {100 * np.mean([metrics[key][c] for c in codes]):7.1f}%"
                for key in ("acc", "fidelity", "probe_acc")))
        print(splits_line(metrics, world))
        return
    print(f"{'code':>5}  {'composition':<20} {'split':<7} {'composed':>8} {'fidelity':>8} "
          f"{'probe':>6}")
    for code in data.COMPOSITIONS:
        print(f"{code:>5}  {judge.describe(code):<20} {data.split_of(code):<7} "
              f"{100 * metrics['acc'][code]:7.1f}% "
              f"{100 * metrics['fidelity'][code]:7.1f}% {100 * metrics['probe_acc'][code]:5.1f}%")
    for name, reading in (("fidelity", "fidelity"), ("probe (the study's)", "probe_acc")):
        means = judge.split_means(metrics[reading])
        print(f"{name}: seen {100 * means['seen']:.1f} | level-1 {100 * means['level1']:.1f} | "
              f"level-2 {100 * means['level2']:.1f}")
    print(f"not one legible object {100 * metrics['malformed']:.1f}% | retrieval 1-NN "
          f"{100 * metrics['retrieval_1nn']:.1f}%")
    print(splits_line(metrics))


def splits_line(metrics, world=data):
    """The contract's closing line, 'seen x | level-1 y | level-2 z' (%), leaving out a split the
    world has no composition of (clips.py has no level-2: its mean would be NaN)."""
    names = (("seen", "seen"), ("level1", "level-1"), ("level2", "level-2"))
    return " | ".join(f"{label} {100 * metrics[key]:.1f}" for key, label in names
                      if world.SPLITS[key])


# ------------------------------------------------------------------------------ precision
# The one precision rule; every training and sampling loop enters runs.autocast(device), and the
# heads, likelihoods and losses leave it through runs.full_precision(device).
def half_precision(device):
    """The dtype the matrix products run in on this device, or None for fp32. bf16 on a CUDA GPU
    that computes it natively (compute capability 8 and up); fp16 on older ones (T4, V100: there
    bf16 is emulated, and slow), with runs.grad_scaler; fp32 on cpu and mps. On a CPU bf16 speeds
    the matrix products up but its attention backward slows down more: no step is faster."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    native = torch.cuda.is_bf16_supported() and torch.cuda.get_device_capability(device)[0] >= 8
    return torch.bfloat16 if native else torch.float16


def autocast(device):
    """The context every training and sampling loop runs its network in: autocast to
    half_precision(device), or nothing at all (fp32)."""
    dtype = half_precision(device)
    if dtype is None:                    # not even a disabled autocast: torch < 2.5 refuses "mps"
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype)


def full_precision(device):
    """Autocast off inside, whatever the loop entered: heads, likelihoods and losses in fp32."""
    kind = torch.device(device).type
    if kind not in ("cuda", "cpu"):      # autocast is never on there (and torch < 2.5 refuses mps)
        return contextlib.nullcontext()
    return torch.autocast(kind, enabled=False)


def grad_scaler(device):
    """fp16 gradients underflow: the scaler multiplies the loss before backward and divides the
    gradients back (scaler.unscale_) before clipping. On only where autocast gives fp16;
    elsewhere scale, unscale_, step and update pass straight through."""
    enabled = half_precision(device) == torch.float16
    return torch.amp.GradScaler(torch.device(device).type, enabled=enabled)


# ------------------------------------------------------------------------ the learning rate
def learning_rate(config, step):
    """The ladder's one schedule: linear warm-up over --warm-up-steps, then --lr held (constant) or
    decayed to 0 at --steps along half a cosine: lr = lr_max (1 + cos(pi s / S)) / 2."""
    warm_up = min(1.0, (step + 1) / config["warm_up_steps"])
    if config["lr_schedule"] == "constant":
        return config["lr"] * warm_up
    progress = min(1.0, step / config["steps"])
    return config["lr"] * warm_up * (1 + math.cos(math.pi * progress)) / 2


# ---------------------------------------------------------------------------- checkpoints
def evaluation_steps(steps, first):
    """first, first*sqrt2, first*2, ... and the last step: evenly spaced in log(step)."""
    points, k = {steps}, 0
    while round(first * 2 ** (k / 2)) < steps:
        points.add(int(round(first * 2 ** (k / 2))))
        k += 1
    return points


class Checkpoints:
    """A run's ckpt.pt: where training resumes from, and the steps it is evaluated and saved at
    (evaluation_steps). It holds every part of the run's state under its name: the networks, the
    optimizer, the scaler and the random generator (rng), so a resumed run goes on bit for bit."""

    def __init__(self, config, **parts):
        self.config, self.parts = config, parts
        self.steps = evaluation_steps(config["steps"], config["eval_every"])

    def resume(self):
        """The step training starts from: 0, or with --resume the checkpoint's, every part given
        the state saved under its name; metrics after it are dropped, to be recomputed, and the
        clock goes on from the last kept evaluation's wall time."""
        if not self.config["resume"]:
            return 0
        out = self.config["out"]
        state = read_checkpoint(os.path.join(out, "ckpt.pt"))
        self.restore(state)
        kept = [m for m in read_metrics(out) if m["step"] <= state["step"]]
        start_clock(self.config, kept[-1].get("seconds", 0.0) if kept else 0.0)
        with open(os.path.join(out, "metrics.jsonl"), "w") as f:
            f.writelines(json.dumps(m) + "\n" for m in kept)
        return state["step"]

    def due(self, step):
        """Whether the run is evaluated and saved after this many steps."""
        return step in self.steps

    def save(self, step):
        """ckpt.pt, written atomically; with --keep-checkpoints also this step's EMA network."""
        state = self.state(step)
        save_atomic(state, os.path.join(self.config["out"], "ckpt.pt"))
        if self.config.get("keep_checkpoints"):
            kept = dict(ema=state["ema"], step=step, config=self.config)
            save_atomic(kept, os.path.join(self.config["out"], "checkpoints", f"step_{step}.pt"))

    def state(self, step):
        """Every part's state under its name, the step and the config: what ckpt.pt holds."""
        state = {key: part.get_state() if isinstance(part, torch.Generator) else part.state_dict()
                 for key, part in self.parts.items()}
        return dict(state, step=step, config=self.config)

    def restore(self, state):
        """Give every part the state saved under its name."""
        for key, part in self.parts.items():
            if isinstance(part, torch.Generator):
                part.set_state(state[key])
            else:
                part.load_state_dict(state[key])


def read_checkpoint(path):
    """A checkpoint's state, on the CPU; a file that cannot be read (cut short by a full disk or an
    interrupted copy) ends in one line that names it and says what to do."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, OSError, pickle.UnpicklingError) as error:
        raise SystemExit(f"error: {path} is damaged and cannot be read ({type(error).__name__}); "
                         "it cannot be resumed: start a new --out") from None


def save_atomic(state, path):
    """torch.save to a temporary file, then rename: an interruption never leaves half a file."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


# ------------------------------------------------------------------------ evaluation and record
def draw_and_read(draw, model, tokenizer, config, step, loss):
    """One evaluation: read the step's loss (the only time training waits for it), draw every
    composition with the generator's draw, read the samples with the judge, write the run files
    and print the step's line. Returns the metrics."""
    loss = read_loss(loss, step, config)
    model.eval()
    world = worlds.world(config)
    bits = world.requests(config["samples_per_comp"])
    images = generate(draw, model, tokenizer, config, bits, config["seed"])
    model.train()
    metrics = record(config["out"], step, loss, images, bits, title(config), elapsed(config),
                     world)
    tqdm.write(f"step {step}: {splits_line(metrics, world)} | loss {loss:.4f}")
    return metrics


def read_loss(loss, step, config):
    """The loss as a number (a wait for the device), and a stop if it is not finite, before the
    checkpoint is saved, saying where the last good one is. None (a resampled run that kept no
    loss): NaN, recorded as such."""
    if loss is None:
        return float("nan")
    loss = float(loss.detach() if torch.is_tensor(loss) else loss)
    if not math.isfinite(loss):
        kept = os.path.exists(os.path.join(config["out"], "ckpt.pt"))
        where = (f"the last good checkpoint is kept in {config['out']}" if kept
                 else "no checkpoint was written yet")
        raise SystemExit(f"error: loss is {loss} at step {step}; {where}; try a lower --lr")
    return loss


def title(config):
    """What the pictures of a run say it is: 'givt (continuous, pixels, random unmasking)', and
    '(resampled)' after a run tools/resample.py drew again."""
    said = [str(config[key]) for key in ("cond", "tokenizer", "head") if key in config]
    said += [f"{config['unmask']} unmasking"] if "unmask" in config else []
    again = " (resampled)" if "resampled_from" in config else ""
    return f"{config['model']} ({', '.join(said)}){again}"


def generate(draw, model, tokenizer, config, bits, seed):
    """Images (N, H, W, 3) in [0, 1] asked for bits (N, 3), drawn as a run's evaluations draw them:
    latents from seed, the sampler's random draws from seed + 1, so every evaluation asks the same.
    The condition and the sampler's rng are on the model's device."""
    device, world = next(model.parameters()).device, worlds.world(config)
    latents = world.sample_latents(bits, np.random.default_rng(seed))
    values, present = world.conditioning(latents, config["cond"], train=False)
    rng = torch.Generator(device).manual_seed(seed + 1)
    values, present = values.to(device), present.to(device)
    return np.asarray(draw(model, tokenizer, config, values, present, rng))


def elapsed(config):
    """Seconds of the run until now, resumed runs' earlier seconds included."""
    clock = config["clock"]
    return round(clock["before"] + time.time() - clock["start"], 1)


def record(out, step, loss, images, bits, title, seconds=0.0, world=data):
    """Judge one evaluation's samples; write metrics.jsonl,
    samples/step_N.npz, samples.npz/png, curves.png."""
    images = as_uint8(images)
    bits = np.asarray(bits, dtype=np.int64)
    metrics = dict(step=step, loss=float(loss), seconds=seconds,
                   **judge.evaluate(images, bits, world))
    keep(out, metrics, images=images, factors=bits)
    picture = save_samples_png if world is data else save_grid_png
    picture(os.path.join(out, "samples.png"), images, bits, title=f"{title}, step {step}",
            world=world)
    save_curves_png(os.path.join(out, "curves.png"), read_metrics(out), title=title, world=world)
    return metrics


def as_uint8(images):
    return (np.clip(np.asarray(images, dtype=np.float32), 0, 1) * 255).round().astype(np.uint8)


def keep(out, metrics, **samples):
    """One evaluation's line in metrics.jsonl, and its samples in samples/step_N.npz (kept, so that
    a new judge can read the run again) and samples.npz (the last evaluation's)."""
    with open(os.path.join(out, "metrics.jsonl"), "a") as f:
        f.write(json.dumps(metrics) + "\n")
    os.makedirs(os.path.join(out, "samples"), exist_ok=True)
    np.savez_compressed(os.path.join(out, "samples", f"step_{metrics['step']}.npz"), **samples)
    np.savez_compressed(os.path.join(out, "samples.npz"), **samples)


def read_metrics(out):
    path = os.path.join(out, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


# ------------------------------------------------------------------------------- pictures
def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_samples_png(path, images, bits, per_row=12, title="", world=data):
    """One labelled row per composition; the split is named and coloured on the label."""
    plt = pyplot()
    images = np.asarray(images)
    images = images if images.dtype == np.uint8 else (np.clip(images, 0, 1) * 255).astype(np.uint8)
    codes = np.array([data.bits_to_code(b) for b in bits])
    cell = data.IMAGE_SIZE + 2                                    # an image and a 2-pixel gap
    mosaic = np.full((8 * cell, per_row * cell, 3), 40, np.uint8)  # 8 rows, per_row columns
    for row, code in enumerate(data.COMPOSITIONS):
        for column, image in enumerate(images[codes == code][:per_row]):
            top, left = row * cell, column * cell
            mosaic[top:top + data.IMAGE_SIZE, left:left + data.IMAGE_SIZE] = image
    width = per_row * 0.55 + 2.6                            # inches, 2.6 of them for the row labels
    fig = plt.figure(figsize=(width, 8 * 0.62))
    # fixed margins: no layout pass, so a picture at every evaluation is cheap
    ax = fig.add_axes((2.5 / width, 0.01, 1 - 2.6 / width, 0.91))
    ax.imshow(mosaic, interpolation="nearest")
    ax.set_axis_off()
    for row, code in enumerate(data.COMPOSITIONS):
        split = data.split_of(code)
        ax.text(-3, (row + 0.45) * cell, f"{code} {split}\n{judge.describe(code)}", ha="right",
                va="center", fontsize=7, color=SPLIT_COLORS[split])
    fig.suptitle(title, fontsize=9)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def log_step_axis(ax):
    """Training steps on a log scale, labelled 10, 30, 100, 300, ... (not 3x10^1, 4x10^1, ...)."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 3.0)))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("training step")


def save_curves_png(path, history, title="", world=data):
    """The composition reading per composition over training (a world of many compositions: per
    group of its table, GROUPS), log-scaled steps."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4))
    steps = [m["step"] for m in history]
    for name, codes in table_rows(world).items():
        split = world.split_of(codes[0])
        ax.plot(steps, [100 * np.mean([m["acc"].get(c, np.nan) for c in codes]) for m in history],
                marker="o", markersize=3, color=SPLIT_COLORS[split], label=f"{name} ({split})",
                linestyle="-" if split != "level1" else "--")
    log_step_axis(ax)
    ax.set_ylabel("composed (%): legible, all three factors right")
    ax.set_ylim(-3, 103)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.subplots_adjust(left=0.11, right=0.98, bottom=0.12, top=0.92)   # fixed margins: no layout
    fig.savefig(path, dpi=110)
    plt.close(fig)


def save_grid_png(path, images, bits, title="", world=data):
    """A world of many compositions as the study's grids: one cell a composition (its first
    sample), rows the values of every factor but the last, columns the last factor's values,
    each cell bordered by its split's colour."""
    plt = pyplot()
    from matplotlib.colors import to_rgb
    images, sizes = np.asarray(images), [len(values) for values in world.VALUES]
    images = images if images.dtype == np.uint8 else as_uint8(images)
    columns, rows = sizes[-1], int(np.prod(sizes[:-1]))
    side, cell = world.IMAGE_SIZE, world.IMAGE_SIZE + 4             # an image in a 2-pixel frame
    mosaic = np.full((rows * cell, columns * cell, 3), 255, np.uint8)
    codes = [world.bits_to_code(b) for b in bits]
    for code in dict.fromkeys(codes):
        index = np.unravel_index(np.ravel_multi_index(world.code_to_bits(code), sizes),
                                 (rows, columns))
        top, left = index[0] * cell, index[1] * cell
        one_from_group1 = code in getattr(world, "GROUPS", {}).get("group1", ())
        frame = "lightskyblue" if one_from_group1 else SPLIT_COLORS[world.split_of(code)]
        mosaic[top:top + cell, left:left + cell] = np.array(to_rgb(frame)) * 255
        mosaic[top + 2:top + 2 + side, left + 2:left + 2 + side] = images[codes.index(code)]
    width, height = columns * 0.45 + 1.6, rows * 0.45 + 0.9                       # inches
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((1.5 / width, 0.4 / height, 0.99 - 1.5 / width, 1 - 0.9 / height))
    ax.imshow(mosaic, interpolation="nearest")
    ax.set_xticks([(c + 0.5) * cell for c in range(columns)], world.VALUES[-1], fontsize=6)
    ax.set_xlabel(world.FACTORS[-1], fontsize=7)
    labels = [" ".join(v) for v in itertools.product(*world.VALUES[:-1])]
    ax.set_yticks([(r + 0.5) * cell for r in range(rows)], labels, fontsize=6)
    ax.tick_params(length=0)
    group1 = "group1" in getattr(world, "GROUPS", {})              # a world with super groups
    legend = (["seen blue" + " (light: one value of super group 1)" * group1, "level-1 pink"]
              + ["level-2 red"] * bool(world.LEVEL2))
    fig.suptitle(f"{title}\nframe: " + ", ".join(legend), fontsize=6)
    fig.savefig(path, dpi=110)
    plt.close(fig)
