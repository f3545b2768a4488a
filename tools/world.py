"""The world's picture, and how much of the novel compositions' codebook tokens training never
shows.

    python tools/world.py        # writes results/world/world.png and reach.md, and prints the reach

The picture: real images of all eight compositions, one row each. The reach: for real images
of the novel compositions, the share of codebook tokens (and of distinct codes) that no training
image contains, codes MaskGIT's categorical head has never been asked for.
"""
import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import data  # noqa: E402
import probe  # noqa: E402
import runs  # noqa: E402
import tokenizers  # noqa: E402


def reach(images, bits, codebook, trained):
    """{split: (share of tokens, share of distinct codes) never among the training tokens}."""
    shares = {}
    for split in ("level1", "level2"):
        chosen = np.isin([data.bits_to_code(b) for b in bits], data.SPLITS[split])
        needed = codebook.encode(images[chosen]).flatten().tolist()
        shares[split] = (np.mean([i not in trained for i in needed]),
                         np.mean([i not in trained for i in set(needed)]))
    return shares


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
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
