"""The mutation table (tests/mutations.py) breaks methods by text: each correct text must still be
in its file, once, and each row must name guarding tests that exist."""
import ast
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from mutations import MUTATIONS  # noqa: E402


def test_the_table_has_forty_rows_over_every_method_file():
    assert len(MUTATIONS) >= 40
    files = {row[0] for row in MUTATIONS}
    assert {"maskgit.py", "givt.py", "mar.py", "dit.py", "jepa_maskgit.py", "ar.py", "data.py",
            "probe.py", "judge.py", "inside.py"} <= files


@pytest.mark.parametrize("path, right, wrong, guards, assignment", MUTATIONS)
def test_every_mutation_finds_its_text_and_names_tests_that_exist(path, right, wrong, guards,
                                                                  assignment):
    source = open(os.path.join(ROOT, path)).read()
    assert source.count(right) == 1, f"{right[:60]!r} occurs {source.count(right)} times in {path}"
    assert right != wrong and guards
    for guard in guards:
        file, name = guard.split("::")
        defined = {n.name for n in ast.parse(open(os.path.join(ROOT, file)).read()).body
                   if isinstance(n, ast.FunctionDef)}
        assert name in defined, f"{guard} does not exist"
