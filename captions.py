"""Captions: --cond text and text-partial, where the condition is a sentence, not the latents.

A caption names the three classes and nothing else ("a small blue triangle": no exact colour,
size or position), so it holds what `--cond discrete` holds, in words. A small text encoder,
trained from scratch with the generator, reads it. data.conditioning makes the captions from a
batch's class bits; the generators' ConditionEmbedding reads them with TextEncoder.
"""
import numpy as np
import torch
import torch.nn as nn

VOCABULARY = ("<pad>", "a", "circle", "triangle", "shape", "red", "blue", "big", "small",
              "that", "is", "in")
WORDS = (("circle", "triangle"), ("red", "blue"), ("big", "small"))     # bit -> word, per factor
PHRASINGS = 3                  # word orders as English has them; training draws one per caption
CAPTION_LENGTH = 6             # the longest caption, "a blue triangle that is small"


def caption(shape, color, size, phrasing=0):
    """One caption from the three factors' words; a factor given as None is left out (its
    noun becomes "shape"). phrasing 0 is what evaluations ask: "a small blue triangle"."""
    noun = shape or "shape"
    if phrasing == 0:
        words = ["a", size, color, noun]                          # a small blue triangle
    elif phrasing == 1:
        words = ["a", color, noun] + (["that", "is", size] if size else [])
    elif phrasing == 2:
        words = ["a", size, noun] + (["in", color] if color else [])  # a small triangle in blue
    else:
        raise ValueError(f"unknown phrasing {phrasing}; there are {PHRASINGS}")
    return " ".join(word for word in words if word)


def caption_table():
    """Every caption's word ids, (2, 2, 2, 2, 2, 2, PHRASINGS, L): indexed by the three bits, which
    of the three words are kept, and the phrasing (a lookup, so captions are made on any device)."""
    table = torch.zeros(2, 2, 2, 2, 2, 2, PHRASINGS, CAPTION_LENGTH, dtype=torch.long)
    for index in np.ndindex(*table.shape[:-1]):
        bits, kept, phrasing = index[:3], index[3:6], index[6]
        words = [WORDS[f][b] if k else None for f, (b, k) in enumerate(zip(bits, kept))]
        text = caption(*words, phrasing=phrasing).split()
        table[index][:len(text)] = torch.tensor([VOCABULARY.index(word) for word in text])
    return table


CAPTIONS = caption_table()
_ON_DEVICE = {}                # the table, copied to each device once


def captions(bits, partial=False, drop_prob=0.1, rng=None):
    """Captions of compositions, bits (B, 3) int64 on the device, as (word ids (B, L), present
    (B, L), False at padding). Training (rng given) draws a phrasing per caption; partial: each
    factor's word is left out with drop_prob (text-partial, training only). Evaluations ask
    phrasing 0, in full."""
    device = bits.device
    kept = torch.ones_like(bits)
    if partial:
        kept = (torch.rand(bits.shape, generator=rng, device=device) >= drop_prob).long()
    phrasing = torch.zeros(len(bits), dtype=torch.long, device=device)
    if rng is not None:
        phrasing = torch.randint(PHRASINGS, (len(bits),), generator=rng, device=device)
    if device not in _ON_DEVICE:
        _ON_DEVICE[device] = CAPTIONS.to(device)
    ids = _ON_DEVICE[device][(*bits.T, *kept.T, phrasing)]                  # (B, L)
    return ids, ids != 0


class TextEncoder(nn.Module):
    """A caption's reader, trained from scratch with the generator: word and position
    embeddings, one pre-norm self-attention block over the words, and their mean: (B, D)."""

    def __init__(self, width, heads=4):
        super().__init__()
        self.words = nn.Embedding(len(VOCABULARY), width)
        self.positions = nn.Parameter(0.02 * torch.randn(CAPTION_LENGTH, width))
        self.norm1 = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, ids, present):                              # ids, present (B, L)
        h = self.words(ids) + self.positions[:ids.shape[1]]       # (B, L, D)
        x = self.norm1(h)
        h = h + self.attention(x, x, x, key_padding_mask=~present, need_weights=False)[0]
        h = h + self.mlp(self.norm2(h))
        weight = present[..., None].float()                       # padding does not count
        return (h * weight).sum(1) / weight.sum(1)                # (B, D)
