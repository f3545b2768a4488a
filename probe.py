"""The judge every generator is scored by, and the run files every generator writes.

A sample counts as correct for composition "abc" only if
  1. it is WELL FORMED: the renderer of data.py can reproduce it. We fit one shape of the
     world to it (colour from its bright pixels, position and size from the moments of its
     coverage, both shapes tried) and count the pixels where the best rendering differs
     by more than 0.25; more than MAX_BAD_PIXELS such pixels, a colour outside the class
     boxes or a size outside the class ranges, and it is rejected. Fragments, two half
     shapes, blobs, noise, blank images and overlaid shapes all fail this test; and
  2. a LINEAR PROBE reads all three factors right: one linear softmax classifier per
     factor on a fixed, non-learned feature map (the image shifted so that its centre of
     coverage is the image centre: translation is not a factor), trained on real images
     of all eight compositions.

`python probe.py` trains (or loads) the probe and prints its accuracy on real images, on
noisy ones, on each tokenizer's round trip and on broken images; it also saves a picture
of the world.
"""
import json
import math
import os

import numpy as np
import torch

import data

MAX_BAD_PIXELS = 8      # pixels the best rendering may miss by more than BAD_PIXEL
BAD_PIXEL = 0.25        # a pixel is bad if its largest channel error exceeds this
PROBE_SEED, HELD_OUT_SEED = 12345, 54321
SPLIT_COLORS = {"seen": "tab:blue", "level1": "hotpink", "level2": "red"}


# ------------------------------------------------------------------- well-formedness
def fit_world(images):
    """Best renderable explanation of each image: (latents (N, 7), bad pixel count (N,))."""
    images = np.asarray(images, dtype=np.float32)
    n = len(images)
    flat = images.reshape(n, -1, 3)
    bright = flat.max(2) > 0.5                                           # object interior
    color = (flat * bright[..., None]).sum(1) / bright.sum(1, keepdims=True).clip(1)
    alpha = (flat * color[:, None]).sum(2) / (color ** 2).sum(1, keepdims=True).clip(1e-6)
    alpha = np.where(alpha > 0.25, alpha.clip(0, 1), 0.0)                # ignore faint noise
    area = alpha.sum(1).clip(1e-6)
    grid = np.arange(data.IMAGE_SIZE, dtype=np.float32) + 0.5
    ys, xs = [g.ravel() for g in np.meshgrid(grid, grid, indexing="ij")]
    cx, cy = (alpha * xs).sum(1) / area, (alpha * ys).sum(1) / area
    circle_size = np.sqrt(area / math.pi)                                # area = pi s^2
    triangle_radius = np.sqrt(4 * area / (3 * math.sqrt(3)))             # area = 3 sqrt3 R^2 / 4
    shape = np.repeat([0.0, 1.0], n)
    size = np.concatenate([circle_size, triangle_radius / data.TRIANGLE_SCALE])
    centre_y = np.concatenate([cy, cy - 0.25 * triangle_radius])         # centroid -> box centre
    latents = np.concatenate([shape[:, None], np.tile(color, (2, 1)), size[:, None],
                              np.tile(cx, 2)[:, None], centre_y[:, None]], 1)
    error = np.abs(data.render(latents) - np.tile(images, (2, 1, 1, 1))).max(-1)
    bad = (error > BAD_PIXEL).sum((1, 2)).reshape(2, n)
    best = bad.argmin(0)
    bad = np.where(bright.sum(1) >= 4, bad[best, np.arange(n)], data.IMAGE_SIZE ** 2)
    return latents.reshape(2, n, 7)[best, np.arange(n)], bad


def well_formed(images):
    """True where the image is one clean object the renderer could have drawn."""
    latents, bad = fit_world(images)
    color_ok = (np.abs(latents[:, None, 1:4] - data.CLASS_COLORS[None]).max(2)
                <= data.COLOR_JITTER + 0.07).any(1)
    size, (low, high) = latents[:, 4], (data.SIZE_RANGES.min() - 0.5, data.SIZE_RANGES.max() + 0.5)
    return (bad <= MAX_BAD_PIXELS) & color_ok & (size >= low) & (size <= high)


# ------------------------------------------------------------------------ linear probe
def features(images):
    """The fixed feature map: each image shifted (whole pixels) so its coverage is centred."""
    images = torch.as_tensor(np.asarray(images, dtype=np.float32))
    coverage = images.amax(-1)                                           # (N, H, W)
    total = coverage.sum((1, 2)).clamp(min=1e-6)
    grid = torch.arange(data.IMAGE_SIZE, dtype=torch.float32)
    cy = (coverage.sum(2) * grid).sum(1) / total
    cx = (coverage.sum(1) * grid).sum(1) / total
    centre = (data.IMAGE_SIZE - 1) / 2
    shifted = [torch.roll(image, (int(round(centre - y)), int(round(centre - x))), (0, 1))
               for image, y, x in zip(images, cy.tolist(), cx.tolist())]
    return torch.stack(shifted).flatten(1)                              # (N, H*W*3)


class LinearProbe(torch.nn.Module):
    def __init__(self, dim=data.IMAGE_SIZE ** 2 * 3):
        super().__init__()
        self.heads = torch.nn.Linear(dim, 2 * len(data.FACTORS))         # 2 logits a factor

    def forward(self, x):
        return self.heads(x).view(len(x), len(data.FACTORS), 2)         # (N, 3, 2)

    def predict(self, images):
        with torch.no_grad():
            return self(features(images)).argmax(-1).numpy()            # (N, 3) bits


def train_probe(n_per_code=1000, steps=300, seed=PROBE_SEED):
    images, bits, _ = data.make_dataset(data.COMPOSITIONS, n_per_code, seed)
    # Half the images get pixel noise, so that the probe does not lean on faint pixels.
    noise = np.random.default_rng(seed).normal(0, 0.05, images.shape).astype(np.float32)
    noisy = np.clip(images + noise * (np.arange(len(images)) % 2)[:, None, None, None], 0, 1)
    x, y = features(noisy), torch.as_tensor(bits)
    torch.manual_seed(seed)
    probe = LinearProbe()
    optimizer = torch.optim.Adam(probe.parameters(), lr=1e-2, weight_decay=1e-4)
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(probe(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return probe


def load_probe():
    """The probe, trained once and cached under .cache/ (keyed on the world's definition)."""
    path = data.cache_path("probe")
    probe = LinearProbe()
    if os.path.exists(path):
        probe.load_state_dict(torch.load(path, weights_only=True))
        return probe
    probe = train_probe()
    data.save_atomic(probe.state_dict(), path, shared=True)
    return probe


# --------------------------------------------------------------------------- evaluation
_JUDGE = {}


def _judge():
    """The probe and a real reference set for retrieval, built once per process."""
    if not _JUDGE:
        images, bits, _ = data.make_dataset(data.COMPOSITIONS, 250, HELD_OUT_SEED + 1)
        _JUDGE.update(probe=load_probe(), reference=features(images), reference_bits=bits)
    return _JUDGE


def evaluate(images, factors):
    """Judge generated images (N, H, W, 3) in [0, 1] (uint8 accepted) asked for `factors`.

    Returns acc (code -> fraction correct), the split means seen / level1 / level2,
    malformed (fraction rejected) and retrieval_1nn / retrieval_5nn: the fraction whose
    nearest real image(s), among real images of all eight, have the asked composition.
    """
    images = np.asarray(images)
    images = images.astype(np.float32) / 255 if images.dtype == np.uint8 else images.astype(np.float32)
    factors = np.asarray(factors, dtype=np.int64)
    judge = _judge()
    formed = well_formed(images)
    correct = formed & (judge["probe"].predict(images) == factors).all(1)
    neighbours = torch.cdist(features(images), judge["reference"]).topk(5, largest=False).indices
    same = (judge["reference_bits"][neighbours.numpy()] == factors[:, None]).all(2)  # (N, 5)
    codes = np.array([data.bits_to_code(f) for f in factors])
    acc = {c: float(correct[codes == c].mean()) for c in data.COMPOSITIONS if (codes == c).any()}
    result = {"acc": acc}
    for split, members in data.SPLITS.items():
        values = [acc[c] for c in members if c in acc]
        result[split] = float(np.mean(values)) if values else float("nan")
    result.update(malformed=float(1 - formed.mean()), retrieval_1nn=float(same[:, 0].mean()),
                  retrieval_5nn=float((same.sum(1) >= 3).mean()))
    return result


def broken_images(n, seed=0):
    """Images a judge must reject, built from real renderings: name -> (n, H, W, 3)."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, (n, 3))
    a, b = data.sample_latents(bits, rng), data.sample_latents(1 - bits, rng)
    image_a = data.render(a)
    half = np.arange(data.IMAGE_SIZE)[None, None, :, None] < a[:, 5, None, None, None]
    circle, triangle = a.copy(), a.copy()
    circle[:, 0], triangle[:, 0] = 0, 1
    notch = a.copy()
    notch[:, 0], notch[:, 1:4], notch[:, 4] = 0, 1.0, 0.5 * a[:, 4]          # white: coverage
    notch[:, 6] = a[:, 6] - a[:, 4]
    b_moved = b.copy()
    b_moved[:, 5:7] = a[:, 5:7] + rng.choice([-9, 9], (n, 2))
    b_moved[:, 1:4] = a[:, 1:4]
    grid = np.arange(data.IMAGE_SIZE) + 0.5
    d2 = ((grid[None, None, :] - a[:, 5, None, None]) / 1.8) ** 2 + (grid[None, :, None] - a[:, 6, None, None]) ** 2
    blob = np.exp(-d2 / (2 * a[:, 4, None, None] ** 2))[..., None] * a[:, None, None, 1:4]
    purple = a.copy()
    purple[:, 1:4] = (data.CLASS_COLORS[0] + data.CLASS_COLORS[1]) / 2
    giant = a.copy()
    giant[:, 4] = 13.0
    return {
        "fragment (half a shape)": np.where(half, image_a, 0),
        "two half shapes": np.where(half, data.render(circle), data.render(triangle)),
        "notched circle": data.render(circle) * (1 - data.render(notch).max(-1, keepdims=True)),
        "blob": blob.astype(np.float32),
        "noise": rng.uniform(0, 1, image_a.shape).astype(np.float32),
        "blank": np.zeros_like(image_a),
        "two shapes": np.maximum(image_a, data.render(b_moved)),
        "overlaid circle and triangle": np.maximum(data.render(circle), data.render(triangle)),
        "purple shape": data.render(purple),
        "giant shape": data.render(giant),
    }


def describe(code):
    """'110' -> 'blue big triangle'."""
    shape, color, size = data.code_to_bits(code)
    return f"{('red', 'blue')[color]} {('big', 'small')[size]} {('circle', 'triangle')[shape]}"


# ------------------------------------------------------------------------------ pictures
def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_samples_png(path, images, factors, per_row=12, title=""):
    """One labelled row per composition; the split is named and coloured on the label."""
    plt = _pyplot()
    images = np.asarray(images)
    images = images if images.dtype == np.uint8 else (np.clip(images, 0, 1) * 255).astype(np.uint8)
    codes = np.array([data.bits_to_code(f) for f in factors])
    fig, axes = plt.subplots(8, 1, figsize=(per_row * 0.55 + 2.6, 8 * 0.62), squeeze=False)
    for ax, code in zip(axes[:, 0], data.COMPOSITIONS):
        row = images[codes == code][:per_row]
        strip = np.zeros((data.IMAGE_SIZE, per_row * (data.IMAGE_SIZE + 2), 3), np.uint8) + 40
        for i, image in enumerate(row):
            strip[:, i * (data.IMAGE_SIZE + 2):i * (data.IMAGE_SIZE + 2) + data.IMAGE_SIZE] = image
        ax.imshow(strip, interpolation="nearest")
        split = data.split_of(code)
        ax.set_ylabel(f"{code} {split}\n{describe(code)}", rotation=0, ha="right", va="center",
                      fontsize=7, color=SPLIT_COLORS[split])
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
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


def save_curves_png(path, history, title=""):
    """Judged accuracy per composition over training, log-scaled steps."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4))
    steps = [m["step"] for m in history]
    for code in data.COMPOSITIONS:
        split = data.split_of(code)
        ax.plot(steps, [100 * m["acc"].get(code, np.nan) for m in history], marker="o", markersize=3,
                color=SPLIT_COLORS[split], label=f"{code} ({split})",
                linestyle="-" if split != "level1" else "--")
    log_step_axis(ax)
    ax.set_ylabel("judged accuracy (%)")
    ax.set_ylim(-3, 103)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------- the run files of the contract
def resolve_device(name):
    """'auto' -> cuda, then mps, then cpu; an explicit device must exist."""
    available = {"cpu": True, "cuda": torch.cuda.is_available(),
                 "mps": getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()}
    if name == "auto":
        return next(d for d in ("cuda", "mps", "cpu") if available[d])
    if not available.get(name, False):
        present = ", ".join(d for d, ok in available.items() if ok)
        raise SystemExit(f"error: --device {name} is not available here; present: {present} (or auto)")
    return name


def add_common_arguments(parser, steps, eval_every, model):
    """The flags of the contract, the same in every generator."""
    parser.add_argument("--steps", type=int, default=steps, help="training steps")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3, help="peak AdamW learning rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "mps", "cpu"))
    parser.add_argument("--cond", default="continuous", choices=data.COND_MODES)
    parser.add_argument("--cond-drop", type=float, default=0.1, help="hiding probability per factor")
    parser.add_argument("--eval-every", type=int, default=eval_every,
                        help="first evaluation step; later ones each x1.41 (even in log step), and the last step")
    parser.add_argument("--samples-per-comp", type=int, default=32)
    parser.add_argument("--train-per-comp", type=int, default=5000, help="training images per seen composition")
    parser.add_argument("--out", default=os.path.join("runs", model), help="run folder")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out")


def start_run(parser, args, model):
    """Validate flags, pick the device, guard the run folder, write config.json."""
    for name in ("steps", "batch_size", "eval_every", "samples_per_comp", "train_per_comp"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}")
    if args.eval_every > args.steps:
        parser.error(f"--eval-every {args.eval_every} is larger than --steps {args.steps}")
    if not (args.lr > 0 and math.isfinite(args.lr)):
        parser.error(f"--lr must be a positive number, got {args.lr}")
    if not 0 <= args.cond_drop < 1:
        parser.error(f"--cond-drop must be in [0, 1), got {args.cond_drop}")
    args.device = resolve_device(args.device)
    checkpoint = os.path.join(args.out, "ckpt.pt")
    if args.resume and not os.path.exists(checkpoint):
        parser.error(f"--resume: no checkpoint at {checkpoint}")
    if not args.resume and os.path.exists(os.path.join(args.out, "metrics.jsonl")):
        parser.error(f"{args.out} already holds a run; pass --resume to continue it, or --out NEW_FOLDER")
    config = dict(vars(args), model=model)
    if args.resume:                                      # refuse before config.json is touched
        check_resumable(args.out, model, config)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return config


def evaluation_steps(steps, first):
    """first, first*sqrt2, first*2, ... and the last step: evenly spaced in log(step)."""
    points, k = {steps}, 0
    while round(first * 2 ** (k / 2)) < steps:
        points.add(int(round(first * 2 ** (k / 2))))
        k += 1
    return points


def read_metrics(out):
    path = os.path.join(out, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def record(out, step, loss, images, factors, title):
    """Judge one evaluation's samples and write metrics.jsonl, samples.npz/png, curves.png."""
    images = (np.clip(np.asarray(images, dtype=np.float32), 0, 1) * 255).round().astype(np.uint8)
    factors = np.asarray(factors, dtype=np.int64)
    metrics = dict(step=step, loss=float(loss), **evaluate(images, factors))
    with open(os.path.join(out, "metrics.jsonl"), "a") as f:
        f.write(json.dumps(metrics) + "\n")
    np.savez_compressed(os.path.join(out, "samples.npz"), images=images, factors=factors)
    save_samples_png(os.path.join(out, "samples.png"), images, factors, title=f"{title}, step {step}")
    save_curves_png(os.path.join(out, "curves.png"), read_metrics(out), title=title)
    return metrics


def check_finite(loss, step, out):
    """Stop at once on a non-finite loss, saying where the last good checkpoint is."""
    if not torch.isfinite(loss):
        kept = os.path.exists(os.path.join(out, "ckpt.pt"))
        where = f"the last good checkpoint is kept in {out}" if kept else "no checkpoint was written yet"
        raise SystemExit(f"error: loss is {loss.item()} at step {step}; {where}; try a lower --lr")


def save_checkpoint(out, **state):
    """ckpt.pt, written atomically."""
    data.save_atomic(state, os.path.join(out, "ckpt.pt"))


def check_resumable(out, model, config):
    """A checkpoint is resumed only by its own model with the same settings (--steps may grow)."""
    saved = torch.load(os.path.join(out, "ckpt.pt"), map_location="cpu", weights_only=True).get("config", {})
    if saved.get("model") != model:
        raise SystemExit(f"error: {out}/ckpt.pt was written by {saved.get('model')!r}, not {model!r}")
    for key in [k for k in saved if k not in ("device", "resume", "out", "steps") and k in config]:
        if saved[key] != config[key]:
            raise SystemExit(f"error: {out}/ckpt.pt has {key}={saved[key]!r}, this run asks {config[key]!r}; "
                             f"use the same settings to resume, or a new --out")


def load_checkpoint(out):
    """ckpt.pt (checked by start_run); metrics after it are dropped, to be recomputed."""
    state = torch.load(os.path.join(out, "ckpt.pt"), map_location="cpu", weights_only=True)
    kept = [m for m in read_metrics(out) if m["step"] <= state["step"]]
    with open(os.path.join(out, "metrics.jsonl"), "w") as f:
        f.writelines(json.dumps(m) + "\n" for m in kept)
    return state


def run(model, config, train):
    """Train, turn Ctrl-C into a hint on how to resume, and print the closing table."""
    print(f"{model}: device {config['device']}, run folder {config['out']}")
    try:
        metrics = train(config)
    except KeyboardInterrupt:
        raise SystemExit(f"\ninterrupted; the last evaluation's checkpoint is in {config['out']}: "
                         f"continue with --resume --out {config['out']}")
    report(metrics)


def report(metrics):
    """The per-composition table and the closing line of the contract."""
    print(f"{'code':>5}  {'composition':<20} {'split':<7} {'accuracy':>8}")
    for code in data.COMPOSITIONS:
        print(f"{code:>5}  {describe(code):<20} {data.split_of(code):<7} {100 * metrics['acc'][code]:7.1f}%")
    print(f"malformed {100 * metrics['malformed']:.1f}% | retrieval 1-NN {100 * metrics['retrieval_1nn']:.1f}% "
          f"5-NN {100 * metrics['retrieval_5nn']:.1f}%")
    print(f"seen {100 * metrics['seen']:.1f} | level-1 {100 * metrics['level1']:.1f} | level-2 {100 * metrics['level2']:.1f}")


# ------------------------------------------------------------------------------- main
def _table(rows):
    print(f"{'images':<34}" + "".join(f"{c:>6}" for c in data.COMPOSITIONS) + f"{'malformed':>11}")
    for name, result in rows:
        print(f"{name:<34}" + "".join(f"{100 * result['acc'][c]:6.1f}" for c in data.COMPOSITIONS)
              + f"{100 * result['malformed']:10.1f}%")


def main():
    import time
    start = time.time()
    load_probe()
    print(f"probe ready in {time.time() - start:.1f}s (cached under {data.CACHE_DIR})\n")
    images, bits, _ = data.make_dataset(data.COMPOSITIONS, 250, HELD_OUT_SEED)
    noisy = images + np.random.default_rng(0).normal(0, 0.05, images.shape).astype(np.float32)
    rows = [("real (held out)", evaluate(images, bits)),
            ("real + noise sigma 0.05", evaluate(noisy.clip(0, 1), bits))]
    for name in ("codebook", "pca"):
        tokenizer = data.load_tokenizer(name)
        roundtrip = tokenizer.decode(tokenizer.encode(images))
        rows.append((f"{name} round trip ({tokenizer.patch}x{tokenizer.patch} patches)", evaluate(roundtrip, bits)))
    print("judged accuracy (%) per composition, 250 images each")
    _table(rows)
    broken = broken_images(250)
    print("\nbroken images: fraction the judge accepts as well formed (should be ~0)")
    for name, batch in broken.items():
        print(f"  {name:<32} {100 * well_formed(batch).mean():5.1f}%")
    os.makedirs("results", exist_ok=True)
    order = np.lexsort(bits.T[::-1])
    save_samples_png("results/world.png", images[order], bits[order], title="Shapes2D: real images")
    codebook = data.load_tokenizer("codebook")
    trained = set(codebook.encode(data.training_set()[0]).flatten().tolist())
    for split in ("level1", "level2"):
        novel = np.isin([data.bits_to_code(b) for b in bits], data.SPLITS[split])
        needed = codebook.encode(images[novel]).flatten().tolist()
        print(f"codebook reach, {split}: {100 * np.mean([i not in trained for i in needed]):.1f}% of the "
              f"tokens of real images ({100 * np.mean([i not in trained for i in set(needed)]):.1f}% of the "
              f"distinct codes) never occur in the generators' training tokens")
    print(f"\nsaved results/world.png ({time.time() - start:.1f}s in all)")


if __name__ == "__main__":
    main()
