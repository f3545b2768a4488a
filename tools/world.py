"""The world's picture, and how much of the novel compositions' codebook tokens training never
shows.

    python tools/world.py        # writes results/world/world.png and reach.md, and prints the reach
    python tools/world.py --world shapes3d    # results/shapes3d/reach.md and .json: the reach of
                                              # each nested seen set (--seen-count)

The picture: real images of all eight compositions, one row each. The reach: for real images
of the novel compositions, the share of codebook tokens (and of distinct codes) that no training
image contains, codes MaskGIT's categorical head has never been asked for. In the many-valued
world, per seen set of the diversity sweep (shapes3d.SEEN_COUNTS): its own codebook, fitted on its
own training images, and the tokens of its training set (what a run of that --seen-count learns).
"""
import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import data  # noqa: E402
import probe  # noqa: E402
import runs  # noqa: E402
import tokenizers  # noqa: E402
import worlds  # noqa: E402


def reach(images, bits, codebook, trained, world=data):
    """{split: (share of tokens, share of distinct codes) never among the training tokens}."""
    shares = {}
    for split in ("level1", "level2"):
        chosen = np.isin([world.bits_to_code(b) for b in bits], world.SPLITS[split])
        needed = codebook.encode(images[chosen]).flatten().tolist()
        shares[split] = (np.mean([i not in trained for i in needed]),
                         np.mean([i not in trained for i in set(needed)]))
    return shares


def seen_reach(counts):
    """{N: {split: (tokens, codes)}}: the reach of the first N seen codes' codebook and training
    set, on the same real renders of the novel codes (HELD_OUT_PER_CODE of each)."""
    full = worlds.world("shapes3d")
    images, bits, _ = full.make_dataset(full.LEVEL1 + full.LEVEL2, full.HELD_OUT_PER_CODE,
                                        probe.HELD_OUT_SEED)
    shares = {}
    for count in counts:
        world = worlds.world({"world": "shapes3d", "seen_count": count})
        codebook = tokenizers.load_tokenizer("codebook", world)
        training = world.training_set(world.RUN_DEFAULTS["train_per_comp"])[0]    # a run's own
        trained = set(codebook.encode(training).flatten().tolist())
        shares[count] = reach(images, bits, codebook, trained, world)
    return shares


def write_seen_reach(folder, shares):
    """reach.json (what tools/collect.py draws) and reach.md (what a person reads)."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "reach.json"), "w") as f:
        json.dump({str(n): {split: list(pair) for split, pair in by.items()}
                   for n, by in shares.items()}, f, indent=1)
    lines = ["Rebuilt by `python tools/world.py --world shapes3d`: for each seen set of the "
             "diversity sweep, its own codebook and training set; real renders of the novel codes, "
             f"{worlds.world('shapes3d').HELD_OUT_PER_CODE} of each. The share of their tokens "
             "(and of their distinct codes) that never occur in the training tokens.", "",
             "| seen codes | level-1 tokens | level-1 codes | level-2 tokens | level-2 codes |",
             "|---|---|---|---|---|"]
    lines += [f"| {n} | " + " | ".join(f"{100 * by[split][i]:.1f}%" for split in
                                     ("level1", "level2") for i in (0, 1)) + " |"
              for n, by in shares.items()]
    with open(os.path.join(folder, "reach.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world", default=data.NAME, choices=("shapes2d", "shapes3d"))
    args = parser.parse_args(argv)
    if args.world == "shapes3d":
        shares = seen_reach(worlds.world("shapes3d").SEEN_COUNTS)
        print("\n".join(write_seen_reach(os.path.join(ROOT, "results", "shapes3d"), shares)))
        return
    images, bits, _ = data.make_dataset(data.COMPOSITIONS, 250, probe.HELD_OUT_SEED)
    order = np.lexsort(bits.T[::-1])
    folder = os.path.join(ROOT, "results", "world")
    os.makedirs(folder, exist_ok=True)
    runs.save_samples_png(os.path.join(folder, "world.png"), images[order], bits[order],
                          title="Shapes2D: real images")
    codebook = tokenizers.load_tokenizer("codebook")
    trained = set(codebook.encode(data.training_set()[0]).flatten().tolist())
    lines = [f"codebook reach, {split}: {100 * tokens:.1f}% of the tokens of real images "
             f"({100 * codes:.1f}% of the distinct codes) never occur in the generators' "
             "training tokens" for split, (tokens, codes) in reach(images, bits, codebook,
                                                                  trained).items()]
    print("\n".join(lines))
    with open(os.path.join(folder, "reach.md"), "w") as f:
        f.write("Rebuilt by `python tools/world.py`: real images, 250 per composition.\n\n"
                + "".join(f"- {line}\n" for line in lines))
    print(f"saved {os.path.relpath(os.path.join(folder, 'world.png'))}")


if __name__ == "__main__":
    main()
