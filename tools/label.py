"""Labels by eye for the worlds beside Shapes2D: a stratified set of kept samples, sheets to label
them on, and the readings' agreement with the labels (results/readings/README.md has the rule).

    python tools/label.py draw shapes3d     # pick the set, draw its sheets under runs/label/
    python tools/label.py build shapes3d    # the label files -> tests/gallery_shapes3d.npz
    python tools/label.py agree shapes3d    # the readings against the labels, by reason

The labels are text files, results/readings/labels/<world>/<labelling>/*.txt, a line a sample
("17 accept", "18 refuse size,patch"): two labellings of every sample (first/, second/) by people
who never see each other's, and a third look (third/) where those two disagree; the label is the
majority. A fresh look (fresh/) labels the held-out half once more, to measure a person against
the labels as the readings are.

`draw` takes, from every committed run of the world (results/<world>/runs/), and for every group
of every run family (a model at one seen count, its seeds together), as many samples the reading
composes as it refuses where both exist, shuffled so that a sheet shows neither the run nor the
reading's verdict. Every other sample of a stratum is held out from fitting the rules.
"""
import argparse
import glob
import math
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
import runs  # noqa: E402
import worlds  # noqa: E402
from worlds import clips, shapes3d  # noqa: E402

PENDING = os.path.join(ROOT, "runs", "label")
PER_STRATUM = {"shapes3d": 12, "clips": 10}       # samples per (run family, group)
REASONS = {       # why a person refuses a sample; results/readings/README.md says what each means
    "shapes3d": ("hue", "shape", "size", "patch", "hole", "second", "speckle", "faint"),
    "clips": ("time", "light", "patch", "direction", "stall", "stripe", "noise", "frame"),
}
GALLERIES = {name: os.path.join(ROOT, "tests", f"gallery_{name}.npz") for name in REASONS}
LABELS = os.path.join(ROOT, "results", "readings", "labels")     # <world>/<pass>/*.txt
PASSES = ("first", "second", "third")
READERS = {"shapes3d": shapes3d.read_solids, "clips": clips.read_clips}   # what checks() read


def family(run):
    """'dit-seen34-seed2' -> 'dit-seen34': the run's model and seen set, seeds together."""
    return re.sub(r"-seed\d+$", "", os.path.basename(os.path.normpath(run)))


def pool(name, root=ROOT):
    """Every committed run's kept samples of world `name` (under root/results/<name>/runs/):
    images, factors, sources (run name), families, groups, and the reading's composed verdict."""
    world = worlds.world(name)
    parts = {k: [] for k in ("images", "factors", "sources", "families", "groups", "composed")}
    for run in sorted(glob.glob(os.path.join(root, "results", name, "runs", "*", "samples.npz"))):
        folder = os.path.dirname(run)
        saved = np.load(run)
        images, factors = saved["images"], saved["factors"]
        codes = [world.bits_to_code(f) for f in factors]
        group_of = {c: g for g, members in world.GROUPS.items() for c in members}
        parts["images"].append(images)
        parts["factors"].append(factors)
        parts["sources"] += [os.path.basename(folder)] * len(images)
        parts["families"] += [family(folder)] * len(images)
        parts["groups"] += [group_of[c] for c in codes]
        parts["composed"].append(world.readings(images.astype(np.float32) / 255,
                                                factors)["composed"])
    return {k: np.concatenate(v) if k in ("images", "factors", "composed") else np.array(v)
            for k, v in parts.items()}


def pick(found, per_stratum, seed=0):
    """Indices into the pool: per (family, group), half composed and half refused where both
    exist (the rest from the other side), and a held-out flag for every other pick of each."""
    rng = np.random.default_rng(seed)
    chosen, held_out = [], []
    for fam in sorted(set(found["families"])):
        for group in sorted(set(found["groups"])):
            stratum = (found["families"] == fam) & (found["groups"] == group)
            sides = [rng.permutation(np.flatnonzero(stratum & (found["composed"] == c)))
                     for c in (True, False)]
            take = [min(len(s), per_stratum // 2) for s in sides]
            for side in (0, 1):               # fill from the other side where one runs short
                take[side] = min(len(sides[side]), per_stratum - take[1 - side])
            picked = rng.permutation(np.concatenate([s[:t] for s, t in zip(sides, take)]))
            chosen.extend(picked)
            held_out.extend(np.arange(len(picked)) % 2 == 1)
    order = rng.permutation(len(chosen))
    return np.array(chosen, np.int64)[order], np.array(held_out)[order]


# ------------------------------------------------------------------------------- the sheets
def shapes3d_references(bits):
    """Real renders (8, 32, 32, 3) beside a sample asked for bits: the asked code, its size one
    class smaller and larger (for the largest, one step beyond the world), its neighbour hues,
    its other two shapes, each at the class's middle values; and their titles."""
    color, shape, size = (int(b) for b in bits)
    rows, titles = [], []

    def add(c, s, half_height, title):
        rows.append([shapes3d.HUE_STEP * (c % 10), s, half_height, 16.0, 16.0])
        titles.append(title)
    add(color, shape, shapes3d.SIZES[size], "asked")
    for k in (size - 1, size + 1):
        if 0 <= k < len(shapes3d.SIZES):
            add(color, shape, shapes3d.SIZES[k], f"size {k}")
        else:
            beyond = shapes3d.SIZES[0] + (shapes3d.SIZES[1] - shapes3d.SIZES[0]) * k
            add(color, shape, beyond, f"size {k} (none)")
    for c in (color - 1, color + 1):
        add(c, shape, shapes3d.SIZES[size], shapes3d.VALUES[0][c % 10])
    for s in range(3):
        if s != shape:
            add(color, s, shapes3d.SIZES[size], shapes3d.VALUES[1][s])
    return shapes3d.render(np.array(rows, np.float32)), titles


def draw_shapes3d_sheet(path, images, factors, numbers, scale=4):
    plt = runs.pyplot()
    fig, axes = plt.subplots(len(images), 8, figsize=(8 * 1.25, len(images) * 1.45))
    axes = np.atleast_2d(axes)
    for row, (image, bits, number) in enumerate(zip(images, factors, numbers)):
        references, titles = shapes3d_references(bits)
        tiles = [image] + list((references * 255).astype(np.uint8))
        names = [f"#{number}: {shapes3d.describe(shapes3d.bits_to_code(bits))}"] + titles
        for ax, tile, title in zip(axes[row], tiles, names):
            ax.imshow(tile, interpolation="nearest")
            ax.set_title(title, fontsize=7, fontweight="bold" if title.startswith("#") else None)
            ax.set_xticks([])
            ax.set_yticks([])
        for spine in axes[row, 0].spines.values():
            spine.set_color("red")
            spine.set_linewidth(2)
    fig.tight_layout()
    fig.savefig(path, dpi=int(25 * scale))
    plt.close(fig)


def draw_clips_sheet(path, images, factors, numbers):
    plt = runs.pyplot()
    real, bits, _ = clips.make_dataset(clips.COMPOSITIONS, 1, seed=7)
    real_of = {clips.bits_to_code(b): clip for clip, b in zip(real, bits)}
    fig, axes = plt.subplots(2 * len(images), 4, figsize=(4 * 1.7, 2 * len(images) * 1.75))
    for k, (image, asked, number) in enumerate(zip(images, factors, numbers)):
        code = clips.bits_to_code(asked)
        for line, (clip, title) in enumerate(((image, f"#{number}: asked {clips.describe(code)}"),
                                              ((real_of[code] * 255).astype(np.uint8),
                                               f"a real {clips.describe(code)}"))):
            frames = clips.frames_of(clip[None])[0]
            for t, ax in enumerate(axes[2 * k + line]):
                ax.imshow(frames[t], interpolation="nearest", extent=(0, 16, 16, 0))
                ax.axvline(8, color="white", linewidth=0.4, alpha=0.6)   # the frame's middle
                ax.set_xticks([])
                ax.set_yticks([])
                ax.set_title(f"frame {t + 1}", fontsize=7)
                if t == 0:
                    ax.set_ylabel(title, fontsize=7, fontweight="bold" if line == 0 else None)
                if line == 0:
                    for spine in ax.spines.values():
                        spine.set_color("red")
                        spine.set_linewidth(2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw(name, per_sheet=None):
    """Pick the set from the committed runs (runs/label/<world>.npz: no verdict in it) and draw
    its sheets."""
    found = pool(name)
    chosen, held_out = pick(found, PER_STRATUM[name])
    os.makedirs(PENDING, exist_ok=True)
    np.savez_compressed(os.path.join(PENDING, f"{name}.npz"), images=found["images"][chosen],
                        factors=found["factors"][chosen], sources=found["sources"][chosen],
                        held_out=held_out)
    keys = list(zip(found["families"], found["groups"]))
    share = {k: found["composed"][[key == k for key in keys]].mean() for k in set(keys)}
    np.savez_compressed(os.path.join(PENDING, f"{name}-design.npz"),          # kept from the
                        drawn_composed=found["composed"][chosen],              # labeller's file
                        stratum_share=np.array([share[keys[i]] for i in chosen], np.float32))
    sheets(name, per_sheet)
    print(f"{len(chosen)} samples of {name} from {len(set(found['sources']))} runs; sheets "
          f"{os.path.join(PENDING, name)}_*.png")


def sheets(name, per_sheet=None):
    """The sheets of the pending set, numbered as its samples: the asked composition beside real
    renders, never the run or the reading's verdict."""
    pending = np.load(os.path.join(PENDING, f"{name}.npz"))
    count = len(pending["images"])
    per_sheet = per_sheet or {"shapes3d": 8, "clips": 5}[name]
    sheet = draw_shapes3d_sheet if name == "shapes3d" else draw_clips_sheet
    for first in range(0, count, per_sheet):
        numbers = np.arange(first, min(first + per_sheet, count))
        sheet(os.path.join(PENDING, f"{name}_{first // per_sheet:03d}.png"),
              pending["images"][numbers], pending["factors"][numbers], numbers)


def read_lines(name, text):
    """Lines '17 accept' or '17 refuse size,patch' -> {17: (1 or 0, 'size,patch')}."""
    found = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) < 2 or not parts[0].isdigit() or parts[1] not in ("accept", "refuse"):
            raise SystemExit(f"error: cannot read the label line {line!r}: write 'N accept' or "
                             f"'N refuse REASON[,REASON]'")
        reasons = parts[2] if len(parts) > 2 else ""
        unknown = [r for r in reasons.split(",") if r and r not in REASONS[name]]
        if parts[1] == "refuse" and not reasons or unknown:
            raise SystemExit(f"error: line {line!r}: a refusal names its reasons, each one of "
                             f"{', '.join(REASONS[name])}")
        found[int(parts[0])] = (int(parts[1] == "accept"), reasons)
    return found


def read_pass(name, which, labels=None):
    """One pass's labels, from the text files under results/readings/labels/<world>/<which>/:
    {sample: (label, reasons)}."""
    found = {}
    for path in sorted(glob.glob(os.path.join(labels or LABELS, name, which, "*.txt"))):
        found.update(read_lines(name, open(path).read()))
    return found


def majority(passes, count):
    """labels (N,), reasons (N,) and each pass's labels (3, N), -1 where a pass is silent, from
    [first, second, third]: the first two label every sample, the third exactly those where they
    disagree; the label is the majority, its reasons those of a pass on the majority's side (the
    last such)."""
    first, second, third = passes
    for which, found in (("first", first), ("second", second)):
        if sorted(found) != list(range(count)):
            raise SystemExit(f"error: the {which} pass labels {len(found)} of the {count} samples")
    split = sorted(i for i in range(count) if first[i][0] != second[i][0])
    if sorted(third) != split:
        raise SystemExit(f"error: the third look labels {sorted(third)}; the passes disagree "
                         f"on {split}")
    each = np.full((3, count), -1)
    labels, reasons = np.zeros(count, np.int64), np.full(count, "", "<U40")
    for i in range(count):
        votes = [found[i] for found in passes if i in found]
        for k, found in enumerate(passes):
            each[k, i] = found[i][0] if i in found else -1
        labels[i] = int(sum(v[0] for v in votes) * 2 > len(votes))
        reasons[i] = [v[1] for v in votes if v[0] == labels[i]][-1]
    return labels, reasons, each


def build(name):
    """The gallery from the label files, over the drawn set (runs/label/), or over the committed
    gallery's own samples where the set is not drawn here: new runs change what draw picks."""
    drawn = os.path.join(PENDING, f"{name}.npz")
    pending = dict(np.load(drawn if os.path.exists(drawn) else GALLERIES[name]))
    if os.path.exists(drawn):
        pending.update(np.load(os.path.join(PENDING, f"{name}-design.npz")))
    count = len(pending["images"])
    labels, reasons, each = majority([read_pass(name, w) for w in PASSES], count)
    gallery = {k: pending[k] for k in ("images", "factors", "sources", "held_out",
                                       "drawn_composed", "stratum_share")}
    np.savez_compressed(GALLERIES[name], labels=labels, reasons=reasons, passes=each, **gallery)
    print(f"{count} labelled samples of {name} in {GALLERIES[name]}")


def refusals(name, images, factors):
    """Why the reading refuses each sample (N,): the first of its world's checks the sample fails
    ("no bite"), else the first factor it reads as another value ("the size"); "" where the
    reading composes it."""
    world = worlds.world(name)
    read = READERS[name](images)
    kinds = [np.where(passed, "", check) for check, passed in world.checks(read).items()]
    kinds += [np.where(read["bits"][:, f] == factors[:, f], "", f"the {factor}")
              for f, factor in enumerate(world.FACTORS)]
    first = np.full(len(images), "", dtype=object)
    for kind in reversed(kinds):
        first = np.where(kind != "", kind, first)
    return first


def read_part(name, path=None, part="held out"):
    """The gallery, which of its samples are its `part` (N,) and why the reading refuses each of
    them ("" where it composes it)."""
    gallery = np.load(path or GALLERIES[name])
    keep = {"held out": gallery["held_out"], "fitting": ~gallery["held_out"],
            "all": np.ones(len(gallery["labels"]), bool)}[part]
    images, factors = gallery["images"][keep].astype(np.float32) / 255, gallery["factors"][keep]
    return gallery, keep, refusals(name, images, factors)


def agreement(name, path=None, part="held out"):
    """(share of the gallery's `part` where the reading says what the person said, samples,
    counts of each disagreement: "person refuses: " the person's first reason, where the reading
    composes the sample, or "reading refuses: " its refusal, where the person accepts it)."""
    gallery, keep, why = read_part(name, path, part)
    person, composed = gallery["labels"][keep] == 1, why == ""
    kinds = {}
    for accepted, reason, refusal in zip(person[composed != person],
                                         gallery["reasons"][keep][composed != person],
                                         why[composed != person]):
        kind = (f"reading refuses: {refusal}" if accepted
                else f"person refuses: {reason.split(',')[0]}")
        kinds[kind] = kinds.get(kind, 0) + 1
    return float((composed == person).mean()), int(keep.sum()), kinds


def estimates(name, path=None, groups=None):
    """{(family, group): (people, reading, samples)}: the share of the family's samples of the
    group that people accept, and that the reading composes, each estimated from the labelled
    samples as the set was drawn: the share of each side of the drawing's verdict (stratum_share
    composed) times the share accepted on that side."""
    gallery = np.load(path or GALLERIES[name])
    world = worlds.world(name)
    group_of = {c: g for g, members in world.GROUPS.items() for c in members}
    keys = np.array([f"{family(s)}|{group_of[world.bits_to_code(f)]}"
                     for s, f in zip(gallery["sources"], gallery["factors"])])
    composed = world.readings(gallery["images"].astype(np.float32) / 255,
                              gallery["factors"])["composed"]
    found = {}
    for key in dict.fromkeys(keys):
        fam, group = key.split("|")
        if groups and group not in groups:
            continue
        mine = keys == key
        share = float(gallery["stratum_share"][mine][0])

        def weighted(verdicts):
            total = 0.0
            for side, weight in ((True, share), (False, 1 - share)):
                picked = mine & (gallery["drawn_composed"] == side)
                if weight > 0 and picked.any():
                    total += weight * verdicts[picked].mean()
            return total
        found[(fam, group)] = (weighted(gallery["labels"] == 1), weighted(composed),
                               int(mine.sum()))
    return found


def between_people(name, path=None):
    """The share of samples on which the first two passes agree."""
    passes = np.load(path or GALLERIES[name])["passes"]
    return float((passes[0] == passes[1]).mean())


def against_each_person(name, path=None, part="held out"):
    """(the reading against the first labelling, against the second, the two against each
    other) on the gallery's `part`: the fair test of a reading is one person, not the majority,
    which each person voted in."""
    gallery, keep, why = read_part(name, path, part)
    composed = why == ""
    first, second = gallery["passes"][0][keep], gallery["passes"][1][keep]
    return (float((composed == first).mean()), float((composed == second).mean()),
            float((first == second).mean()))


def where_people_split(name, path=None, part="held out"):
    """(the reading against the label where the first two passes agree, those samples; where they
    split, those samples): a person scores 100% on the first and about half on the second, so the
    first is where a reading falls short of a person."""
    gallery, keep, why = read_part(name, path, part)
    first, second = gallery["passes"][:2, keep]
    right, sure = (why == "") == (gallery["labels"][keep] == 1), first == second
    return (float(right[sure].mean()) if sure.any() else float("nan"), int(sure.sum()),
            float(right[~sure].mean()) if (~sure).any() else float("nan"), int((~sure).sum()))


def fresh_look(name, path=None, labels=None):
    """(the fresh labeller right, the reading right) (n,) bool on the held-out half, each against
    the held-out labels: the held-out half labelled once more (labels/<world>/fresh/) by a
    labeller who voted in no label."""
    gallery, keep, why = read_part(name, path)
    fresh = read_pass(name, "fresh", labels)
    if sorted(fresh) != list(np.flatnonzero(keep)):
        raise SystemExit(f"error: the fresh look labels {len(fresh)} samples; the held-out half "
                         f"is {int(keep.sum())}")
    person = np.array([fresh[i][0] for i in np.flatnonzero(keep)])
    label = gallery["labels"][keep]
    return person == label, (why == "") == (label == 1)


def a_fresh_person(name, path=None, labels=None):
    """(a fresh labeller against the held-out labels, the reading against them, samples): the
    yardstick of how far a person agrees with the labels a reading is held to."""
    person, reading = fresh_look(name, path, labels)
    return float(person.mean()), float(reading.mean()), len(person)


def mcnemar(ahead, behind):
    """The chance that two readers, each as likely as the other to be the one right where just
    one of them is, part at least this unevenly: the exact two-sided McNemar test, a binomial of
    1/2 over the ahead + behind samples where they part."""
    parted = ahead + behind
    tail = sum(math.comb(parted, k) for k in range(min(ahead, behind) + 1)) / 2 ** parted
    return min(1.0, 2 * tail)


def where_a_person_and_the_reading_part(name, path=None, labels=None):
    """(held-out samples the fresh labeller gets right and the reading wrong, the reverse, and
    mcnemar's chance of a split at least this uneven)."""
    person, reading = fresh_look(name, path, labels)
    ahead, behind = int((person & ~reading).sum()), int((reading & ~person).sum())
    return ahead, behind, mcnemar(ahead, behind)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("draw", "sheets", "build", "agree"))
    parser.add_argument("world", choices=tuple(REASONS))
    args = parser.parse_args(argv)
    if args.action == "draw":
        draw(args.world)
    elif args.action == "sheets":
        sheets(args.world)
    elif args.action == "build":
        build(args.world)
    else:
        print(f"{args.world}: the two passes agree on {100 * between_people(args.world):.1f}%")
        for part in ("fitting", "held out"):
            share, count, kinds = agreement(args.world, part=part)
            print(f"  the readings agree with the {part} labels on {100 * share:.1f}% of {count}")
            for who in ("person", "reading"):
                mine = sorted(((k.split(": ", 1)[1], v) for k, v in kinds.items()
                               if k.startswith(who)), key=lambda kv: -kv[1])
                print(f"    {who} refuses: " + (", ".join(f"{k} {v}" for k, v in mine) or "none"))
        first, second, people = against_each_person(args.world)
        print(f"  held out, against one person: the reading agrees with the first labelling on "
              f"{100 * first:.1f}% and the second on {100 * second:.1f}%, the labellings with each "
              f"other on {100 * people:.1f}%")
        sure, agreed, split, apart = where_people_split(args.world)
        print(f"  held out, where the two labellings agree ({agreed} samples) the reading agrees "
              f"with them on {100 * sure:.1f}%; where they split ({apart}), on {100 * split:.1f}%")
        fresh, reading, count = a_fresh_person(args.world)
        print(f"  held out, a fresh labeller who voted in no label agrees with the labels on "
              f"{100 * fresh:.1f}% of {count}, the reading on {100 * reading:.1f}%")
        ahead, behind, chance = where_a_person_and_the_reading_part(args.world)
        print(f"  held out, where just one of the two matches the label ({ahead + behind} "
              f"samples), it is the fresh labeller on {ahead}, the reading on {behind}: as uneven "
              f"a split or more comes by chance {100 * chance:.0f}% of the time (exact McNemar)")
        world = worlds.world(args.world)
        novel = [g for g, codes in world.GROUPS.items()
                 if set(codes) <= set(world.LEVEL1 + world.LEVEL2)]
        print("  composed (%) of the novel groups, people against the reading, each estimated "
              "from the same labelled samples:")
        for (fam, group), (people, reading, count) in estimates(args.world, groups=novel).items():
            print(f"    {fam:<16} {group:<12} people {100 * people:5.1f}  reading "
                  f"{100 * reading:5.1f}  ({count} samples)")


if __name__ == "__main__":
    main()
