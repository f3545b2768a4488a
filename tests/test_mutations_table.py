"""The mutation table (tests/mutations.py) breaks methods by text: each correct text must still be
in its file, once, and each row must name guarding tests that exist."""
import ast
import functools
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from mutations import MUTATIONS  # noqa: E402


def test_the_table_has_forty_rows_over_every_method_file():
    assert len(MUTATIONS) >= 40
    files = {row[0] for row in MUTATIONS}
    assert {"maskgit.py", "givt.py", "mar.py", "dit.py", "jepa_maskgit.py", "studies/ar.py",
            "data.py", "probe.py", "judge.py", "studies/inside.py"} <= files


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


GENERATORS = ["maskgit.py", "givt.py", "mar.py", "dit.py", "jepa_maskgit.py", "studies/ar.py",
              "studies/objects.py"]
# Functions of a generator that hold no method, so need no row: the command line (each flag has
# its rows, tests/test_flags.py), a constructor that only declares layers (a wrong one is a shape
# error, not a quiet bug), and the picture of the samples.
NO_METHOD = {"parse", "get_config", "main", "jepa_arguments", "MAR.__init__", "save_grid"}


@functools.lru_cache(None)
def functions(path):
    """(qualified name, first line, last line) of each function and method of a file; a function
    nested in another is part of it."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef):
                found.append((prefix + child.name, child.lineno, child.end_lineno))
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
    visit(ast.parse(open(os.path.join(ROOT, path)).read()), "")
    return tuple(found)


@functools.lru_cache(None)
def with_a_row(path):
    """The functions of path that a row's text lies in."""
    source, hit = open(os.path.join(ROOT, path)).read(), set()
    for file, right, *_ in MUTATIONS:
        if file == path and right in source:
            line = source[:source.index(right)].count("\n") + 1
            hit |= {name for name, first, last in functions(path) if first <= line <= last}
    return hit


@pytest.mark.parametrize("path", GENERATORS)
def test_every_method_function_of_every_generator_has_a_row(path):
    """The rule of tests/mutations.py. A piece test_ladder holds to one text in several files (the
    backbone) is covered by a row in any of its copies: a bug in another copy fails test_ladder."""
    from test_ladder import SHARED
    covered = with_a_row(path)
    for piece, files in SHARED.items():
        rowed = {name.split(".")[0] for f in files for name in with_a_row(f)}
        if path in files and piece in rowed:
            covered |= {name for name, _, _ in functions(path) if name.split(".")[0] == piece}
    missing = [name for name, _, _ in functions(path) if name not in covered | NO_METHOD]
    assert not missing, f"{path}: functions with no row in tests/mutations.py: {missing}"


# The tools a result passes through (tools/) are held like the method: every function of each file
# listed here has a row. A tool's file joins the list with its rows.
TOOLS = ["tools/resample.py", "tools/cra_features.py", "tools/collect.py",
         "tools/collect_settings.py",
         "tools/collect_tables.py", "tools/collect_worlds.py", "tools/collect_pictures.py",
         "tools/label.py", "tools/reproduce.py", "tools/rejudge.py", "tools/world.py",
         "tools/lesson.py", "tools/inside_summary.py", "tools/gallery.py", "tools/timings.py"]
TOOLS_NO_METHOD = {"main"}              # the command line: it only hands its flags to the functions


@pytest.mark.parametrize("path", TOOLS)
def test_every_function_of_every_tool_has_a_row(path):
    missing = [name for name, _, _ in functions(path)
               if name not in with_a_row(path) | TOOLS_NO_METHOD]
    assert not missing, f"{path}: functions with no row in tests/mutations.py: {missing}"
