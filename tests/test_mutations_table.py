"""course/mutations.py breaks answers by text: each correct text must still be in its file."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "course"))
from mutations import MUTATIONS  # noqa: E402


@pytest.mark.parametrize("assignment, path, right, wrong", MUTATIONS)
def test_every_mutation_finds_the_text_it_breaks(assignment, path, right, wrong):
    source = open(os.path.join(ROOT, path)).read()
    assert source.count(right) == 1, f"{assignment}: {right[:60]!r} occurs {source.count(right)} times in {path}"
