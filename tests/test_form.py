"""The repository keeps its form: a front page of a page, a report organised by question, no
history in the product's text, a house without circles, and results that rebuild."""
import ast
import glob
import os
import re
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "*.py")))
TEXTS = (["README.md", "results/README.md"] + sorted(glob.glob("course/**/*.md", root_dir=ROOT, recursive=True))
         + sorted(glob.glob("course/**/*.py", root_dir=ROOT, recursive=True)) + sorted(glob.glob("course/*.toml", root_dir=ROOT))
         + [f"{m}.py" for m in MODULES] + sorted(glob.glob("tools/*", root_dir=ROOT)))
HISTORY = [r"\b20\d\d-\d\d-\d\d\b",                                   # dates
           r"\bsessions?\b", r"\b(first|second|third|fourth|later|earlier) pass(es)?\b", r"\bissues? #?\d+",
           r"\btoday'?s?\b", r"\bno longer\b", r"\bearlier (machine|runs?|report|judge)\b",
           r"\b(recipe|default|judge) (of )?(before|until)\b", r"\bthe old (judge|recipe|default)\b",
           r"\bsuperseded\b", r"\bwork[- ]log\b"]


def test_the_front_page_is_a_page_and_the_report_a_report():
    assert len(open(os.path.join(ROOT, "README.md")).read().splitlines()) <= 150
    assert len(open(os.path.join(ROOT, "results", "README.md")).read().splitlines()) <= 500


@pytest.mark.parametrize("path", [f"{m}.py" for m in MODULES] + sorted(glob.glob("tools/*.py", root_dir=ROOT)))
def test_no_docstring_promises_a_time_it_does_not_keep(path):
    """A default run takes 10-17 minutes alone on 2 cores (tools/timings.py): 'a few minutes' is not it."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    vague = re.findall(r"a few minutes|minutes on a laptop", text, re.IGNORECASE)
    assert not vague, f"{path} promises {vague[0]!r}: give the measured time"


@pytest.mark.parametrize("path", TEXTS)
def test_no_history_in_the_products_text(path):
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    found = [(text[:m.start()].count("\n") + 1, m.group(0)) for pattern in HISTORY
             for m in re.finditer(pattern, text, re.IGNORECASE)]
    assert not found, f"{path}: history words at (line, word) {found}: say what is, not when; git keeps history"


def imports(module):
    """The project modules a top-level module imports, anywhere in it."""
    tree = ast.parse(open(os.path.join(ROOT, f"{module}.py")).read())
    names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    return names & set(MODULES)


def test_the_world_is_the_ground_floor():
    assert imports("data") == set(), "data.py must import no module of the project"


def test_no_module_imports_one_that_imports_it_back():
    graph = {m: imports(m) for m in MODULES}

    def reach(start):
        seen, todo = set(), list(graph[start])
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(graph[module])
        return seen
    circles = [m for m in MODULES if m in reach(m)]
    assert not circles, f"import circles through {circles}"


def test_results_hold_outputs_only_and_every_image_is_referenced():
    files = glob.glob("results/**/*", root_dir=ROOT, recursive=True)
    scripts = [f for f in files if f.endswith((".py", ".sh"))]
    assert not scripts, f"tools belong in tools/, not results/: {scripts}"
    markdown = {p: open(os.path.join(ROOT, p)).read() for p in
                glob.glob("**/*.md", root_dir=ROOT, recursive=True) if not p.startswith(("runs", ".git"))}
    linked = set()
    for path, text in markdown.items():
        for target in re.findall(r"\]\(([^)#\s]+)", text) + re.findall(r'src="([^"]+)"', text):
            linked.add(os.path.normpath(os.path.join(os.path.dirname(path), target)))
    images = [f for f in files if f.endswith((".png", ".jpg", ".gif", ".svg"))]
    unreferenced = [f for f in images if os.path.normpath(f) not in linked]
    assert not unreferenced, f"images no markdown file links to (delete or link them): {unreferenced[:10]}"


def rebuild_command(table):
    first = open(table).readline()
    match = re.match(r"Rebuilt by `python tools/collect\.py (results/[\w.-]+)((?: --clock [\w.-]+)?)`", first)
    assert match, f"{table}: the first line must give the command that rebuilds it"
    return match.group(1), match.group(2).split()[1:]


@pytest.mark.parametrize("table", sorted(glob.glob("results/*/table.md", root_dir=ROOT)))
def test_every_table_rebuilds_byte_for_byte_from_the_kept_runs(table, tmp_path):
    import collect
    folder, clock = rebuild_command(os.path.join(ROOT, table))
    assert folder == os.path.dirname(table)
    copy = tmp_path / os.path.basename(folder)
    shutil.copytree(os.path.join(ROOT, folder, "runs"), copy / "runs")
    command = "python tools/collect.py " + folder + ("" if not clock else f" --clock {clock[0]}")
    rebuilt = collect.text(collect.load(str(copy), clock[0] if clock else None), command)
    assert rebuilt == open(os.path.join(ROOT, table)).read(), f"{table} does not match its kept runs: rebuild it"


def test_the_front_pages_line_references_point_at_their_functions():
    """README's `file.py:N` `name` pairs: line N of file.py defines name."""
    text = open(os.path.join(ROOT, "README.md")).read()
    references = re.findall(r"`(\w+\.py):(\d+)` `(\w+)`", text)
    assert len(references) >= 8, "the table of where each objective lives"
    for path, line, name in references:
        source = open(os.path.join(ROOT, path)).read().splitlines()
        defines = re.compile(rf"\s*(def|class) {name}\b")
        actual = [i + 1 for i, text in enumerate(source) if defines.match(text)]
        assert int(line) in actual, f"README: {path}:{line} is not where {name} is defined; it is at {actual}"


@pytest.mark.parametrize("table", sorted(glob.glob("results/*/inside.md", root_dir=ROOT)))
def test_every_inside_table_rebuilds_byte_for_byte_from_the_kept_runs(table, tmp_path):
    import inside_summary
    folder = os.path.dirname(table)
    assert open(os.path.join(ROOT, table)).readline().startswith(f"Rebuilt by `python tools/inside_summary.py {folder}`")
    copy = tmp_path / os.path.basename(folder)
    shutil.copytree(os.path.join(ROOT, folder, "runs"), copy / "runs")
    assert inside_summary.text(str(copy))[0] == open(os.path.join(ROOT, table)).read(), f"{table}: rebuild it"


def test_the_front_pages_result_table_is_the_ladders():
    """Every row `python tools/collect.py results/ladder --summary` prints is on the front page."""
    import collect
    readme = open(os.path.join(ROOT, "README.md")).read()
    rows = collect.summary(collect.load(os.path.join(ROOT, "results", "ladder"), None))
    missing = [row for row in rows if row not in readme]
    assert not missing, f"README's result table is stale; these rows are not on it: {missing}"
