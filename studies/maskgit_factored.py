"""MaskGIT with a factored head: a control for why MaskGIT cannot draw what it never saw.

maskgit.py's head gives each of the codebook's 2048 codes its own logit. A code is a pair,
(coverage mask, colour), id = coverage * colours + colour; and a blue triangle edge, a pair that
never occurs in training, gets no probability. This head predicts the two parts as two
categoricals instead, logits a_coverage + b_colour, so p(code) = p(coverage) p(colour): a product
that can put mass on a pair never seen together, if each part was seen. Everything else is
maskgit.py's: flags, masking, loss, training, decoding. The report reads the result.

    python studies/maskgit_factored.py --out runs/maskgit-factored
"""
import argparse
import os
import sys

import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the top
import data
import maskgit
import runs
import tokenizers
import worlds

NAME = "maskgit_factored"
SAMPLING = maskgit.SAMPLING          # what tools/resample.py may change: maskgit.py's sampler
DEFAULTS = maskgit.DEFAULTS          # maskgit.py's values, every one


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=runs.Help)
    runs.add_common_arguments(parser, NAME, DEFAULTS)
    maskgit.add_arguments(parser)
    return parser, runs.parse_args(parser, argv)


class FactoredMaskGIT(maskgit.MaskGIT):
    """maskgit.py's network with the factored head: logits (B, T, V) over the joint codes,
    V = coverages * colours, each the sum of its coverage's and its colour's logit."""

    def __init__(self, parts, width=128, depth=4, heads=4, length=64, cond="continuous",
                 groups=data.COND_GROUPS):
        super().__init__(parts[0] * parts[1], width, depth, heads, length, cond, groups)
        self.parts = parts                                                  # (coverages, colours)
        self.head = nn.Linear(width, sum(parts))                            # in place of the joint
        nn.init.zeros_(self.head.weight)                                    # adaLN-Zero, as there
        nn.init.zeros_(self.head.bias)

    def forward(self, ids, values, present):
        coverages, colours = super().forward(ids, values, present).split(self.parts, -1)
        return (coverages[..., :, None] + colours[..., None, :]).flatten(-2)   # (B, T, V)


def build(config):
    """The factored network, shaped by the config, and its tokenizer: the codebook."""
    world = worlds.world(config)
    codebook = tokenizers.load_tokenizer("codebook", world)
    return FactoredMaskGIT((codebook.n_masks, codebook.n_colors), config["width"], config["depth"],
                           config["heads"], cond=config["cond"], groups=world.COND_GROUPS), codebook


def train(config):
    maskgit.train(config, build)


draw = maskgit.draw                  # what an evaluation draws: maskgit.py's decoding


def main(argv=None):
    runs.run(NAME, runs.start_run(*parse(argv), NAME), train)


if __name__ == "__main__":
    main()
