"""Clips: the study's driving-clip split (its Table 12) in time, in data.py's world interface.

A clip is four frames of 16x16 RGB laid out as a 2x2 mosaic in one 32x32 image: frame 1 top-left,
frame 2 top-right, frame 3 bottom-left, frame 4 bottom-right. Each frame is 4x4 of the generators'
4x4-pixel patches, so every generator's 64 tokens, positions and losses serve unchanged and no
patch straddles two frames. The scene is a road reduced to what the factors need: sky above the
horizon (4 rows: a patch boundary), ground, the road from the bottom of the frame to a vanishing
point on the horizon, and a painted stripe across the road that comes nearer from frame to frame:
the forward motion every clip has, so that a still clip is no clip. Below the horizon every colour
is one warm grey at some brightness, so that the codebook's (mask x colour) patches can draw it.
Two factors, in this order:

    digit | factor    | 0    | 1        | 2
    1st   | time      | day  | night    |
    2nd   | direction | left | straight | right

A code is its two digits: "02" is day-right, "10" night-left. Time of day is brightness: at night
every colour is 0.3 of the day's but the stripe's, whose paint shines in the headlights (0.75).
Direction is motion only: the vanishing point moves left, not at all, or right from frame to frame
(the road bends), and frame 1 is the same picture for the three directions (up to the continuous
jitter), so no single frame tells the direction. Split exactly as the study's Table 12: generators
train on SEEN = day-left, day-straight, night-straight, night-right ("00 01 11 12") and are asked
for the novel LEVEL1 = day-right and night-left ("02 10"), each one flip from a seen class.

There is no level-2 class (LEVEL2 is empty). A third factor would make one, but it would change
the six-class world that Table 12 reads and halve the clips of each of its classes, so the world
stays the study's; the level-2 mean is NaN, runs.splits_line leaves the split out, and GROUPS
holds one table row per class, the rows of Table 12. Latents, one row a clip (the continuous
condition is these, exact):

    latents[:, 0]  time (0 day, 1 night)
    latents[:, 1]  gain, the clip's brightness, within +-0.1 of 1 (every frame the same)
    latents[:, 2]  lateral speed of the vanishing point, px a frame: left -1.7..-1.2, straight
                   -0.12..0.12, right 1.2..1.7
    latents[:, 3]  the vanishing point's x in frame 1, within +-0.5 px of the middle
    latents[:, 4]  forward speed: the stripe's depth gained a frame, 0.13..0.17
    latents[:, 5]  the stripe's depth in frame 1, 0.20..0.30 (0 the horizon, 1 the bottom row)

Readings (readings): time of day from each frame's brightness; then the renderer's frame of that
time that fits best (vanishing point, stripe's depth, gain) gives the direction from how the
vanishing point moves, and forward motion from how the stripe comes nearer. CRA (cra), as the
study's Table 12 but in a fixed feature space of our own (V-JEPA2's cannot be had here): the
class of each clip's nearest real clip in `features`, frame 1 and the three differences between
consecutive frames, each pooled 2x2 to 8x8 RGB (768 numbers), so that both the time of day (frame
1) and the motion (the differences) count, and a single pixel's jitter little.
"""
import hashlib

import numpy as np
import torch
import torch.nn.functional as F

NAME = "clips"
IMAGE_SIZE, FRAME, FRAMES = 32, 16, 4
FACTORS = ("time", "direction")
VALUES = (("day", "night"), ("left", "straight", "right"))
COMPOSITIONS = ("00", "01", "02", "10", "11", "12")
SEEN = ("00", "01", "11", "12")
LEVEL1 = ("02", "10")
LEVEL2 = ()
SPLITS = {"seen": SEEN, "level1": LEVEL1, "level2": LEVEL2}
GROUPS = {"day-left": ("00",), "day-straight": ("01",), "day-right": ("02",),
          "night-left": ("10",), "night-straight": ("11",), "night-right": ("12",)}
COND_MODES = ("continuous", "discrete", "dropout", "discrete-dropout")

HORIZON = 4.0                                  # rows of sky in a frame
SKY = (0.50, 0.66, 0.88)
HUE = np.array([1.0, 0.94, 0.82])              # below the horizon, one warm grey throughout:
GROUND, ROAD, STRIPE = 0.70 * HUE, 0.30 * HUE, 0.88 * HUE  # a patch is a mask times one colour
NIGHT, LIGHTS = 0.3, 0.75                      # night: the day's light times 0.3, but the
                                               # stripe's paint, in the headlights, 0.75
GAIN_JITTER = 0.1
LATERAL = np.array([[-1.7, -1.2], [-0.12, 0.12], [1.2, 1.7]])   # px a frame, per direction
START_JITTER, SPEED, START_DEPTH = 0.5, (0.13, 0.17), (0.20, 0.30)
PROBE_PER_CODE, HELD_OUT_PER_CODE = 1000, 250
RUN_DEFAULTS = {}                              # Shapes2D's: 4 x 5,000 training clips, 32 a code
TOKENIZERS = {"codebook": dict(n_colors=4, per_code=100),   # 1,024 masks x 4 colours, fitted
              "pca": dict(per_code=100)}                 # on 400 seen clips (Shapes2D: 2,000)
DEFINITION = (IMAGE_SIZE, FRAME, HORIZON, SKY, HUE.tolist(), GROUND.tolist(), ROAD.tolist(),
              STRIPE.tolist(), NIGHT, LIGHTS, GAIN_JITTER,
              LATERAL.tolist(), START_JITTER, SPEED, START_DEPTH)   # and the clips: definition()


def code_to_bits(code):
    """'02' -> (0, 2); refuses anything that is not one of the six codes."""
    if code not in COMPOSITIONS:
        raise ValueError(f"unknown composition code {code!r} of {NAME}: time 0-1, direction 0-2; "
                         f"choose from {', '.join(COMPOSITIONS)}")
    return tuple(int(c) for c in code)


def bits_to_code(bits):
    return "".join(str(int(b)) for b in bits)


def split_of(code):
    code_to_bits(code)
    return next(name for name, codes in SPLITS.items() if code in codes)


def describe(code):
    """'02' -> 'day-right'."""
    time, direction = code_to_bits(code)
    return f"{VALUES[0][time]}-{VALUES[1][direction]}"


def requests(n_per_code):
    """The value indices an evaluation asks for, n_per_code of each class in order: (N, 2)."""
    return np.repeat([code_to_bits(c) for c in COMPOSITIONS], n_per_code, 0)


# ----------------------------------------------------------------------------- rendering
def sample_latents(bits, rng):
    """Latents (N, 6) for the asked value indices (N, 2), drawn within the class ranges."""
    bits = np.asarray(bits, dtype=np.int64).reshape(-1, 2)
    n = len(bits)
    low, high = LATERAL[bits[:, 1]].T
    start = FRAME / 2 + rng.uniform(-START_JITTER, START_JITTER, n)
    return np.stack([bits[:, 0], 1 + rng.uniform(-GAIN_JITTER, GAIN_JITTER, n),
                     rng.uniform(low, high), start, rng.uniform(*SPEED, n),
                     rng.uniform(*START_DEPTH, n)], 1).astype(np.float32)


def draw_frames(night, vanish, depth):
    """Frames (M, 16, 16, 3) at gain 1: the time (M,), the vanishing point's x (M,) and the
    stripe's depth (M,). Every edge is anti-aliased (coverage clip(0.5 - d, 0, 1), d the signed
    distance in pixels), so a sub-pixel move changes the picture."""
    night, vanish, depth = (np.asarray(a, np.float32)[:, None, None]
                            for a in (night, vanish, depth))                # (M, 1, 1) each
    x = np.arange(FRAME, dtype=np.float32)[None, None, :] + 0.5                # pixel centres
    y = np.arange(FRAME, dtype=np.float32)[None, :, None] + 0.5
    z = ((y - HORIZON) / (FRAME - HORIZON)).clip(0, 1)          # depth of a row: 0 far, 1 near
    centre, half = vanish + (FRAME / 2 - vanish) * z, 0.5 + 4.5 * z                 # (M, 16, 1)
    sky = np.clip(HORIZON - y + 0.5, 0, 1)                                          # (1, 16, 1)
    road = np.clip(half - np.abs(x - centre) + 0.5, 0, 1) * (1 - sky)              # (M, 16, 16)
    row = HORIZON + (FRAME - HORIZON) * depth                   # the stripe: thicker the nearer
    stripe = road * np.clip(0.2 + 0.8 * depth - np.abs(y - row) + 0.5, 0, 1)
    light = np.where(night > 0.5, NIGHT, 1.0)[..., None]              # (M, 1, 1, 1)
    paint = np.where(night > 0.5, LIGHTS, 1.0)[..., None]
    return (light * (sky[..., None] * SKY + (1 - sky - road)[..., None] * GROUND
                     + (road - stripe)[..., None] * ROAD)
            + paint * stripe[..., None] * STRIPE).astype(np.float32)


def mosaic(frames):
    """Frames (N, 4, 16, 16, 3) -> clips (N, 32, 32, 3): 1 top-left, 2 top-right, 3 bottom-left,
    4 bottom-right."""
    n = len(frames)
    return np.asarray(frames).reshape(n, 2, 2, FRAME, FRAME, 3).transpose(0, 1, 3, 2, 4, 5) \
        .reshape(n, IMAGE_SIZE, IMAGE_SIZE, 3)


def frames_of(images):
    """Clips (N, 32, 32, 3) -> frames (N, 4, 16, 16, 3), the inverse of mosaic."""
    n = len(images)
    return np.asarray(images).reshape(n, 2, FRAME, 2, FRAME, 3).transpose(0, 1, 3, 2, 4, 5) \
        .reshape(n, FRAMES, FRAME, FRAME, 3)


def render(latents):
    """Clips (N, 32, 32, 3) float32 in [0, 1] from latents (N, 6): frame t (0-3) has its vanishing
    point at x0 + lateral t and its stripe at depth d0 + speed t. Drawn 2,048 clips at a time, so
    that a training set of 20,000 holds little memory beyond itself."""
    latents = np.asarray(latents, dtype=np.float32)
    if len(latents) > 2048:
        return np.concatenate([render(part) for part in np.array_split(latents,
                                                                       -(-len(latents) // 2048))])
    t = np.arange(FRAMES, dtype=np.float32)[None]
    night = np.repeat(latents[:, 0], FRAMES)
    vanish = (latents[:, 3, None] + latents[:, 2, None] * t).ravel()
    depth = (latents[:, 5, None] + latents[:, 4, None] * t).ravel()
    frames = draw_frames(night, vanish, depth).reshape(len(latents), FRAMES, FRAME, FRAME, 3)
    return mosaic(frames * latents[:, 1, None, None, None, None])


def make_dataset(codes, n_per_code, seed):
    """clips (N, 32, 32, 3) float32, value indices (N, 2) int64, latents (N, 6)."""
    rng = np.random.default_rng(seed)
    bits = np.repeat(np.array([code_to_bits(c) for c in codes]), n_per_code, axis=0)
    bits = bits[rng.permutation(len(bits))]
    latents = sample_latents(bits, rng)
    return render(latents), bits, latents


def training_set(n_per_code=5000, seed=0):
    """What a generator (and a tokenizer's fit) may learn from: seen classes only."""
    return make_dataset(SEEN, n_per_code, seed)


def definition():
    """What the caches of this world's fitted probes and tokenizers are keyed by
    (data.cache_path): DEFINITION, its named constants, and a fingerprint of the renderer's own
    clips of every class, so that a change to a drawing's numbers (the road's width, the stripe's
    thickness) refits them too."""
    latents = sample_latents(requests(4), np.random.default_rng(0))
    clips = np.round(render(latents), 4).tobytes()
    return DEFINITION + (hashlib.sha1(clips).hexdigest(),)


# -------------------------------------------------------------------------- conditioning
# The condition is a vector of 6 values: the time (-1 day, 1 night) and the exact gain; the exact
# lateral speed (its sign and size are the direction); the nuisance of the clip (start, speed,
# stripe's depth), which the discrete modes hide as Shapes2D's hide the position.
COND_GROUPS = (("time", 0, 2), ("direction", 2, 3), ("motion", 3, 6))
COND_CENTRE = np.array([0.5, 1.0, 0.0, FRAME / 2, np.mean(SPEED), np.mean(START_DEPTH)],
                       np.float32)
COND_SCALE = np.array([0.5, GAIN_JITTER, 1.45, START_JITTER, 0.02, 0.05], np.float32)


def class_bits(latents):
    """The value indices (B, 2) int64 that latents (B, 6) render: the time, and the direction
    of the lateral speed (beyond +-0.6 px a frame it turns)."""
    latents = torch.as_tensor(latents)
    lateral = latents[:, 2]
    return torch.stack([latents[:, 0].round().long(),
                        (lateral > -0.6).long() + (lateral > 0.6).long()], 1)


def conditioning(latents, mode, drop_prob=0.1, rng=None, train=True):
    """(values (B, 6), present (B, 3)) on rng's device, for the modes of data.conditioning:
    continuous (the exact latents), discrete (the time, the class's middle gain and lateral
    speed, the motion hidden), dropout and discrete-dropout (time or direction hidden with
    drop_prob in training)."""
    if mode not in COND_MODES:
        raise ValueError(f"unknown conditioning mode {mode!r} of {NAME}; choose from "
                         f"{', '.join(COND_MODES)}")
    device = rng.device if rng is not None else torch.device("cpu")
    values = torch.as_tensor(latents, dtype=torch.float32).to(device).clone()
    present = torch.ones(len(values), len(COND_GROUPS), dtype=torch.bool, device=device)
    if mode.startswith("discrete"):
        middle = torch.as_tensor(LATERAL.mean(1), dtype=torch.float32, device=device)
        values[:, 1] = 1.0
        values[:, 2] = middle[class_bits(values.cpu())[:, 1].to(device)]
        present[:, 2] = False
    if mode.endswith("dropout") and train:
        dropped = torch.rand(len(values), 2, generator=rng, device=device) < drop_prob
        present[:, :2] &= ~dropped
    centre, scale = (torch.as_tensor(a, device=device) for a in (COND_CENTRE, COND_SCALE))
    return (values - centre) / scale, present


# ---------------------------------------------------------------------------- the readings
# What a person reads in a clip: four frames of one road at one time of day, the road bending one
# way throughout (or not at all), the stripe coming nearer at a steady pace. The calibration suite
# (calibration_images) bounds the thresholds; within its bounds, max_patch, max_stray, colour_gap,
# max_off_colour and min_bend_step are set by labels people gave model clips (results/readings/).
LEGIBLE = {
    "day_above": 0.35,          # a frame's mean brightness: day above, night below
    "gain": (0.75, 1.25),       # each frame's brightness against the renderer's
    "max_gain_spread": 0.12,    # between the frames of a clip (no flicker)
    "max_patch": 0.2,           # a 4x4 token's mean misfit, per the frame's light
    "max_stray": 1,             # road-dark pixels on a frame's ground off the road: a speck
    "colour_gap": 0.15,         # a pixel this far from both of the scene's colour lines: a
    "max_off_colour": 1,        # colour it lacks; more such pixels in a frame are refused
    "turn": 0.6,                # px a frame the vanishing point moves on average: beyond, a bend
    "min_bend_step": 0.4,       # a bend throughout: each of its three steps at least this its way
    "max_straight_step": 0.75,  # straight throughout: each step within this
    "forward": (0.06, 0.3),     # the stripe's depth gained a frame: it comes nearer
    "max_forward_spread": 0.12,  # between the three steps: at a steady pace
}
MAX_BAD_PIXELS, BAD_PIXEL = 8, 0.25     # fidelity: the renderer's clip within these
VANISH_GRID = np.arange(1.5, 14.51, 0.25, dtype=np.float32)
DEPTH_GRID = np.arange(0.12, 0.901, 0.02, dtype=np.float32)
COLOUR_LINES = np.stack([c / np.linalg.norm(c) for c in (HUE, np.array(SKY))]).astype(np.float32)
_TEMPLATES = {}


def templates(night):
    """The renderer's frames at gain 1 of one time of day, flattened (K, 768), over the grid of
    vanishing points and stripe depths, and those (K, 2): what the fits read."""
    if night not in _TEMPLATES:
        grid = np.array(np.meshgrid(VANISH_GRID, DEPTH_GRID, indexing="ij")).reshape(2, -1).T
        flat = draw_frames(np.full(len(grid), night), grid[:, 0], grid[:, 1]).reshape(len(grid), -1)
        _TEMPLATES[night] = (torch.as_tensor(flat), torch.as_tensor((flat ** 2).sum(1)), grid)
    return _TEMPLATES[night]


def refined_vanish_step(error, best):
    """The fitted vanishing point's correction (m,) in pixels, within half a grid step: the vertex
    of the parabola through the misfit (m, K) of the best template (m,) and of its two neighbours
    in vanishing point (same stripe depth); none at the grid's ends or where the misfit bends
    down. The grid's 0.25 px alone cannot tell a stalled step from a quarter-pixel one."""
    step, stride = VANISH_GRID[1] - VANISH_GRID[0], len(DEPTH_GRID)
    index = best // stride                                 # the best template's vanishing point
    inside = (index > 0) & (index < len(VANISH_GRID) - 1)
    rows = torch.arange(len(best))
    below = error[rows, torch.where(inside, best - stride, best)]
    at, above = error[rows, best], error[rows, torch.where(inside, best + stride, best)]
    curve = below - 2 * at + above
    shift = torch.where(inside & (curve > 0), 0.5 * (below - above) / curve.clamp(min=1e-12), 0.0)
    return (step * shift.clamp(-0.5, 0.5)).numpy()


def read_clips(images):
    """What a person reads in each clip (N, 32, 32, 3) in [0, 1]: per frame (N, 4) its time, the
    fitted vanishing point, stripe's depth and gain, its largest patch (a token's mean misfit,
    per its light), its stray road pixels and its pixels of a colour the scene lacks; per clip
    its bad pixels and value indices (N, 2): the frames' commonest time, the direction of the
    mean step."""
    frames = frames_of(np.asarray(images, dtype=np.float32)).reshape(-1, FRAME * FRAME * 3)
    night = frames.mean(1) < LEGIBLE["day_above"]                                  # (M,)
    fit = np.zeros((len(frames), 2), np.float32)
    gain, drawn = np.zeros(len(frames), np.float32), np.zeros_like(frames)
    ground = np.zeros((len(frames), FRAME, FRAME), bool)        # where the fitted frame is ground
    for time in (0, 1):
        chosen = np.flatnonzero(night == time)
        if not len(chosen):
            continue
        pictures, norms, grid = templates(time)
        x = torch.as_tensor(frames[chosen])
        dot = x @ pictures.T                                                       # (m, K)
        score = dot ** 2 / norms                  # least squares: |x|^2 - dot^2 / |T|^2 least
        best = score.argmax(1)
        gain[chosen] = (dot[torch.arange(len(x)), best] / norms[best]).numpy()
        fit[chosen] = grid[best.numpy()]
        fit[chosen, 0] += refined_vanish_step(-score, best)   # between the grid's points
        drawn[chosen] = gain[chosen, None] * pictures[best].numpy()
        ground[chosen] = (np.abs(pictures[best].numpy().reshape(-1, FRAME, FRAME, 3)
                                 - (NIGHT if time else 1.0) * GROUND).max(-1) < 1e-6)
    misfit = np.abs(frames - drawn).reshape(-1, FRAME, FRAME, 3).max(-1)           # (M, 16, 16)
    # a patch: a 4x4 token (the generators' unit) off the renderer's frame as a whole, against
    # the frame's light (a night frame's is 0.3 of a day's); noise averages out over its 16
    # pixels, a pasted block does not
    light = np.maximum(gain * np.where(night, NIGHT, 1.0), 0.05)
    relative = (frames - drawn).reshape(-1, FRAME, FRAME, 3) / light[:, None, None, None]
    tokens = relative.reshape(-1, 4, 4, 4, 4, 3).mean((2, 4))                    # (M, 4, 4, 3)
    patch = np.abs(tokens).max(-1).reshape(len(frames), -1).max(1)
    # a stray road: road-dark pixels where the fitted frame draws only ground (half a pixel or
    # more off its road), below the horizon's row: a second road, a dark block, which a token's
    # mean can miss; noise seldom darkens the ground half way to the road
    dark = frames.reshape(-1, FRAME, FRAME, 3).mean(-1) \
        < light[:, None, None] * (ROAD.mean() + GROUND.mean()) / 2
    below = np.arange(FRAME)[:, None] > HORIZON                                    # (16, 1)
    stray = (ground & below & dark).reshape(-1, FRAME * FRAME).sum(1)              # (M,)
    # a stray colour: a pixel far from both of the scene's colours at any brightness (the warm
    # grey below the horizon, the sky's blue): GIVT's red, green and purple specks, which a
    # token's mean averages away; the suite's noise (sigma 0.03) seldom strays 0.15
    pixels = frames.reshape(-1, FRAME * FRAME, 3)
    along = pixels @ COLOUR_LINES.T                                           # (M, 256, 2)
    away = np.linalg.norm(pixels[:, :, None] - along[..., None] * COLOUR_LINES, axis=-1)
    off_colour = (away.min(-1) > LEGIBLE["colour_gap"]).sum(1)                     # (M,)
    n = len(images)
    vanish, depth = fit[:, 0].reshape(n, FRAMES), fit[:, 1].reshape(n, FRAMES)
    night = night.reshape(n, FRAMES)
    step = np.diff(vanish, axis=1).mean(1)
    direction = (step > -LEGIBLE["turn"]).astype(np.int64) + (step > LEGIBLE["turn"])
    return {"bits": np.stack([night.mean(1) > 0.5, direction], 1).astype(np.int64),
            "night": night, "vanish": vanish, "depth": depth, "gain": gain.reshape(n, FRAMES),
            "patch": patch.reshape(n, FRAMES), "stray": stray.reshape(n, FRAMES),
            "off_colour": off_colour.reshape(n, FRAMES),
            "bad": (misfit > BAD_PIXEL).reshape(n, -1).sum(1)}


def checks(read, rule=LEGIBLE):
    """Each test legible() asks of a clip, by name: (N,) True where the clip passes it."""
    turns = np.diff(read["vanish"], axis=1)                                        # (N, 3)
    forward = np.diff(read["depth"], axis=1)
    way = read["bits"][:, 1, None] - 1                          # -1 left, 0 straight, 1 right
    gain = read["gain"]
    return {
        "one time": (read["night"] == read["night"][:, :1]).all(1),
        "lit as drawn": ((gain >= rule["gain"][0]).all(1) & (gain <= rule["gain"][1]).all(1)
                         & (np.ptp(gain, 1) <= rule["max_gain_spread"])),
        "no patch": (read["patch"] <= rule["max_patch"]).all(1),          # no block off
        "no stray road": (read["stray"] <= rule["max_stray"]).all(1),
        "no stray colour": (read["off_colour"] <= rule["max_off_colour"]).all(1),
        "one bend": np.where(way == 0, np.abs(turns) <= rule["max_straight_step"],
                             turns * way >= rule["min_bend_step"]).all(1),
        "nearing": ((forward >= rule["forward"][0]).all(1) & (forward <= rule["forward"][1]).all(1)
                    & (np.ptp(forward, 1) <= rule["max_forward_spread"])),
    }


def legible(read, rule=LEGIBLE):
    """Four frames the renderer draws, of one time of day, one bend throughout, coming nearer."""
    return np.logical_and.reduce(list(checks(read, rule).values()))


def readings(images, factors):
    """Per clip (judge.readings serves these): composed, a legible clip of the asked time and
    direction; precise (fidelity), composed and the renderer's frames of what was read within
    MAX_BAD_PIXELS pixels off by more than BAD_PIXEL; legible; read, the value indices (N, 2)."""
    read = read_clips(images)
    ok = legible(read)
    composed = ok & (read["bits"] == np.asarray(factors)).all(1)
    return {"composed": composed, "precise": composed & (read["bad"] <= MAX_BAD_PIXELS),
            "legible": ok, "read": read["bits"]}


# ------------------------------------------------------------------ CRA, the study's Table 12
REFERENCE_SEED = 24680            # the real clips CRA retrieves from (no generator learns them)
_REFERENCE = {}


def features(images):
    """The fixed feature space of CRA (N, 768): frame 1 and the differences of consecutive frames,
    each pooled 2x2 to 8x8 RGB. Frame 1 carries the time of day, the differences the motion."""
    frames = torch.as_tensor(frames_of(np.asarray(images, dtype=np.float32)))  # (N, 4, 16, 16, 3)
    pooled = F.avg_pool2d(frames.permute(0, 1, 4, 2, 3).flatten(0, 1), 2)      # (4N, 3, 8, 8)
    pooled = pooled.permute(0, 2, 3, 1).reshape(len(frames), FRAMES, -1)       # (N, 4, 8 * 8 * 3)
    return torch.cat([pooled[:, :1], pooled.diff(dim=1)], 1).flatten(1)


def retrieve(images):
    """The class code of each clip's nearest real clip in features (N,): real clips of all six
    classes, HELD_OUT_PER_CODE each."""
    if HELD_OUT_PER_CODE not in _REFERENCE:
        real, bits, _ = make_dataset(COMPOSITIONS, HELD_OUT_PER_CODE, REFERENCE_SEED)
        _REFERENCE[HELD_OUT_PER_CODE] = (features(real), [bits_to_code(b) for b in bits])
    reference, codes = _REFERENCE[HELD_OUT_PER_CODE]
    nearest = torch.cdist(features(images), reference).argmin(1).numpy()
    return np.array(codes)[nearest]


def cra(images, factors):
    """The study's Table 12 for the clips asked for factors (N, 2): {"row": {asked code: {class
    code: share of its clips whose nearest real clip is of that class}} (the six-way row), "hit1":
    {asked code: the share that lands on the asked class} (chance 1/6), "hit_refused": {asked
    code: the share that lands on the asked class though the composed reading refuses it}}.
    Retrieval has no "not a clip" answer: a patchwork lands on some class, often the asked one."""
    asked = np.array([bits_to_code(f) for f in np.asarray(factors)])
    found = retrieve(images)
    refused = ~readings(images, factors)["composed"]
    rows = {code: {c: float((found[asked == code] == c).mean()) for c in COMPOSITIONS}
            for code in COMPOSITIONS if (asked == code).any()}
    return {"row": rows, "hit1": {code: row[code] for code, row in rows.items()},
            "hit_refused": {code: float(((found == code) & refused)[asked == code].mean())
                            for code in rows}}


# ------------------------------------------------------------------------ the calibration
def calibration_images(n=200, seed=1):
    """Kinds of clips a person accepts as the asked class and kinds a person refuses as one clip,
    n of each, all asked for the same codes: (accepted {kind: clips}, rejected {kind: clips},
    asked (n, 2)). The readings' thresholds are set on these."""
    rng = np.random.default_rng(seed)
    bits = np.array([code_to_bits(c) for c in rng.choice(COMPOSITIONS, n)])
    latents = sample_latents(bits, rng)
    clean = render(latents)
    frames = frames_of(clean)
    t = np.arange(FRAMES)

    def redraw(night, vanish, depth):                       # per frame (n, 4) -> clips
        drawn = draw_frames(night.ravel(), vanish.ravel(), depth.ravel())
        gain = latents[:, 1, None, None, None, None]
        return mosaic(drawn.reshape(n, FRAMES, FRAME, FRAME, 3) * gain)

    def blur(images):
        flat = torch.as_tensor(frames_of(images)).flatten(0, 1).permute(0, 3, 1, 2)
        blurred = F.avg_pool2d(flat, 3, 1, 1, count_include_pad=False).permute(0, 2, 3, 1)
        return mosaic(blurred.reshape(n, FRAMES, FRAME, FRAME, 3).numpy())

    night = np.repeat(latents[:, :1], FRAMES, 1)
    vanish = latents[:, 3, None] + latents[:, 2, None] * t
    depth = latents[:, 5, None] + latents[:, 4, None] * t
    edge = latents.copy()                                   # the slowest or fastest of the class
    edge[:, 2] = LATERAL[bits[:, 1], rng.integers(0, 2, n)]
    # mid-clip, from step k on, the road bends another way (another direction class)
    k = rng.integers(1, 3, n)[:, None]
    other = (bits[:, 1] + rng.integers(1, 3, n)) % 3
    steps = np.where(np.arange(FRAMES - 1) < k, latents[:, 2, None],
                     LATERAL[other].mean(1)[:, None])                       # (n, 3)
    bent = latents[:, 3, None] + np.concatenate([np.zeros((n, 1)), np.cumsum(steps, 1)], 1)
    shuffled = np.stack([frames[i, order] for i, order in
                         enumerate(rng.permuted(np.tile(t, (n, 1)), axis=1))])
    same = (shuffled == frames).all((2, 3, 4)).all(1)                  # the identity: reverse it
    shuffled[same] = frames[same][:, ::-1]
    dropped, patched, skied = frames.copy(), frames.copy(), frames.copy()
    dropped[np.arange(n), rng.integers(1, FRAMES, n)] = 0
    for i, (k_, row, column) in enumerate(zip(rng.integers(0, FRAMES, n), rng.integers(1, 4, n),
                                             rng.integers(0, 4, n))):
        patched[i, k_, 4 * row:4 * row + 4, 4 * column:4 * column + 4] = 0.9     # a token gone
        skied[i, k_, 4 * row:4 * row + 4, 4 * column:4 * column + 4] = \
            frames[i, k_, :4, 4 * column:4 * column + 4]            # its own sky, day or night
    noisy = (clean + rng.normal(0, 0.03, clean.shape)).clip(0, 1)   # before the draws below
    # colours the scene lacks, below the horizon: a pixel in every frame (a speck, forgiven), or
    # a 2x2 block in one frame
    strange = np.array([[0.9, 0.1, 0.1], [0.1, 0.8, 0.2], [0.6, 0.1, 0.8]], np.float32)
    specked, blocked = frames.copy(), frames.copy()
    for i in range(n):
        rows, columns = rng.integers(5, FRAME, FRAMES), rng.integers(0, FRAME, FRAMES)
        specked[i, t, rows, columns] = strange[rng.integers(0, 3, FRAMES)]
        k_, row = rng.integers(0, FRAMES), rng.integers(5, FRAME - 1)
        column = rng.integers(0, FRAME - 1)
        blocked[i, k_, row:row + 2, column:column + 2] = strange[rng.integers(0, 3)]
    accepted = {
        "clean renders": clean,
        "noisy (sigma 0.03)": noisy,
        "blurred (half a 3x3 box)": 0.5 * clean + 0.5 * blur(clean),
        "dimmed to 85%": 0.85 * clean,
        "the slowest or fastest bend": render(edge),
        "a strange-coloured speck a frame": mosaic(specked),
    }
    rejected = {
        "bends another way mid-clip": redraw(night, bent, depth),
        "frames of two times of day": redraw(np.where(t >= k, 1 - night, night), vanish, depth),
        "still (frame 1 four times)": mosaic(np.repeat(frames[:, :1], FRAMES, 1)),
        "frames shuffled": mosaic(shuffled),
        "backwards (frames reversed)": mosaic(frames[:, ::-1]),
        "a frame dropped (black)": mosaic(dropped),
        "a 4x4 patch gone white": mosaic(patched),
        "its own sky pasted below the horizon": mosaic(skied),
        "a strange-coloured 2x2 block": mosaic(blocked),
        "blank": np.zeros_like(clean),
    }
    return accepted, rejected, bits


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description="This world's readings on its calibration "
                                     "kinds: the share composed of kinds a person accepts, the "
                                     "share not legible of kinds a person refuses; and CRA's "
                                     "Hit@1 on real clips.")
    parser.add_argument("--n", type=int, default=200, help="clips of each kind")
    parser.add_argument("--samples", help="instead, a run's samples.npz: of each asked class, the "
                        "share composed, the share each check of legible() refuses and the share "
                        "whose time and direction read as asked")
    args = parser.parse_args(argv)
    if args.samples:
        kept = np.load(args.samples)
        images, asked = np.asarray(kept["images"], np.float32) / 255, kept["factors"]
        read = read_clips(images)
        as_asked = read["bits"] == asked                           # (N, 2): time, direction
        passed, composed = checks(read), legible(read) & as_asked.all(1)   # as readings() has it
        codes = np.array([bits_to_code(bits) for bits in asked])
        for code in COMPOSITIONS:
            mine = codes == code
            print(f"  {describe(code):<15} composed {100 * composed[mine].mean():5.1f}%; refused: "
                  + ", ".join(f"{name} {100 * (~ok[mine]).mean():.1f}%"
                              for name, ok in passed.items())
                  + "; read as asked: " + ", ".join(f"{factor} {100 * ok.mean():.1f}%" for
                                                    factor, ok in zip(FACTORS, as_asked[mine].T)))
        return
    accepted, rejected, asked = calibration_images(args.n)
    for name, images in accepted.items():
        composed = readings(images.astype(np.float32), asked)["composed"].mean()
        print(f"  accept  {name:<32} {100 * composed:5.1f}% composed")
    for name, images in rejected.items():
        illegible = 1 - readings(images.astype(np.float32), asked)["legible"].mean()
        print(f"  reject  {name:<32} {100 * illegible:5.1f}% not legible")
    hit = cra(accepted["clean renders"], asked)["hit1"]
    print("  CRA Hit@1 of real clips: " + ", ".join(f"{describe(c)} {100 * h:.1f}%"
                                                    for c, h in hit.items()))


if __name__ == "__main__":
    main()
