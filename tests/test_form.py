"""The repository keeps its form: a front page of a page, a report organised by question, no
history in the product's text, a house without circles, results that rebuild, and numbers that
name the files they come from."""
import ast
import glob
import json
import os
import re
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
# Every module of the project, by its import name: the top's files, and the folders' (worlds.clips)
MODULES = sorted([os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "*.py"))]
                 + [folder + ("" if name == "__init__" else "." + name)
                    for folder in ("worlds", "studies")
                    for name in (os.path.basename(p)[:-3]
                                 for p in glob.glob(os.path.join(ROOT, folder, "*.py")))])
# The top level reads as the design card: the five generators, the world a student reads first,
# the study's probe, and what every generator imports (the run plumbing, the judge, the tokenizers,
# the captions); worlds/, studies/, tools/ hold the rest.
TOP = {"maskgit", "jepa_maskgit", "givt", "mar", "dit", "data", "probe", "runs", "judge",
       "tokenizers", "captions"}


def path_of(module):
    """'worlds.clips' -> 'worlds/clips.py', 'worlds' -> 'worlds/__init__.py', 'dit' -> 'dit.py'."""
    parts = module.split(".")
    return ("/".join(parts) if len(parts) > 1 else module) + (
        "/__init__.py" if module in ("worlds", "studies") else ".py")
TEXTS = (["README.md", "results/README.md"]
         + sorted(glob.glob("results/*/README.md", root_dir=ROOT))
         + sorted(glob.glob("course/**/*.md", root_dir=ROOT, recursive=True))
         + sorted(glob.glob("course/**/*.py", root_dir=ROOT, recursive=True))
         + sorted(glob.glob("course/*.toml", root_dir=ROOT))
         + [path_of(m) for m in MODULES]
         + sorted(p for p in glob.glob("tools/*", root_dir=ROOT)
                  if os.path.isfile(os.path.join(ROOT, p))))
HISTORY = [r"\b20\d\d-\d\d-\d\d\b",                                   # dates
           r"\bsessions?\b", r"\b(first|second|third|fourth|later|earlier) pass(es)?\b",
           r"\bissues? #?\d+", r"\btoday'?s?\b", r"\bno longer\b",
           r"\bearlier (machine|runs?|report|judge)\b",
           r"\b(recipe|default|judge) (of )?(before|until)\b",
           r"\bthe old (judge|recipe|default)\b", r"\bsuperseded\b", r"\bwork[- ]log\b"]
# The switch for the strict guard below: its test runs the check either way and fails on it
# only when the switch is on.
FRONT_PAGE_NUMBERS_NAME_THEIR_FILES = True    # every decimal number on README.md is backed


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def test_the_front_page_is_a_page_and_the_report_an_index_of_pages():
    """The front page is a page (150 lines); the report an index (80: the answer, a line a
    question, how to read the numbers) of a page a question, results/<question>/README.md (200
    each: one question's findings, beside its table, read in one sitting)."""
    assert len(read("README.md").splitlines()) <= 150
    assert len(read("results/README.md").splitlines()) <= 80
    pages = glob.glob("results/*/README.md", root_dir=ROOT)
    assert len(pages) >= 10
    for page in pages:
        assert len(read(page).splitlines()) <= 200, page
    linked = set(re.findall(r"\]\(([\w.-]+)/README\.md\)", read("results/README.md")))
    assert linked == {os.path.basename(os.path.dirname(p)) for p in pages}, (
        "results/README.md links each page once from its summary or its reading notes")


@pytest.mark.parametrize("path", [path_of(m) for m in MODULES]
                         + sorted(glob.glob("tools/*.py", root_dir=ROOT)))
def test_no_docstring_promises_a_time_it_does_not_keep(path):
    """A default run takes 10-17 minutes alone on 2 cores (tools/timings.py): 'a few minutes' is
    not it."""
    vague = re.findall(r"a few minutes|minutes on a laptop", read(path), re.IGNORECASE)
    assert not vague, f"{path} promises {vague[0]!r}: give the measured time"


@pytest.mark.parametrize("path", TEXTS)
def test_no_history_in_the_products_text(path):
    text = read(path)
    found = [(text[:m.start()].count("\n") + 1, m.group(0)) for pattern in HISTORY
             for m in re.finditer(pattern, text, re.IGNORECASE)]
    assert not found, (f"{path}: history words at (line, word) {found}: say what is, not when; "
                       "git keeps history")


def imports(module):
    """The project modules a module imports, anywhere in it: `import worlds` and `from worlds
    import clips` name worlds and worlds.clips."""
    tree = ast.parse(read(path_of(module)))
    names = {alias.name for node in ast.walk(tree)
             if isinstance(node, ast.Import) for alias in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return (names & set(MODULES)) - {module}


def test_the_top_level_reads_as_the_card_and_the_rest_is_in_folders():
    top = {m for m in MODULES if "." not in m and m not in ("worlds", "studies")}
    assert top == TOP, f"the top holds {sorted(top - TOP)} beyond the card, lacks {TOP - top}"
    import worlds
    for name, world in worlds.WORLDS.items():         # a world is one file of worlds/, one line
        assert name == "shapes2d" or world.__name__ == f"worlds.{name}", name


def test_the_world_stands_on_the_ground_floor():
    """data.py (the world and its condition) reads only captions.py (a condition's words), and
    that imports nothing of the project."""
    assert imports("captions") == set(), "captions.py must import no module of the project"
    assert imports("data") == {"captions"}, "data.py must import only captions.py"


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
    markdown = {p: read(p) for p in glob.glob("**/*.md", root_dir=ROOT, recursive=True)
                if not p.startswith(("runs", ".git"))}
    linked = set()
    for path, text in markdown.items():
        for target in re.findall(r"\]\(([^)#\s]+)", text) + re.findall(r'src="([^"]+)"', text):
            linked.add(os.path.normpath(os.path.join(os.path.dirname(path), target)))
    images = [f for f in files if f.endswith((".png", ".jpg", ".gif", ".svg"))]
    unreferenced = [f for f in images if os.path.normpath(f) not in linked]
    assert not unreferenced, (f"images no markdown file links to (delete or link them): "
                              f"{unreferenced[:10]}")


def rebuild_command(table):
    first = read(table).splitlines()[0]
    match = re.match(r"Rebuilt by `python tools/collect\.py (results/[\w.-]+)"
                     r"((?: --clock [\w.-]+)?)`", first)
    assert match, f"{table}: the first line must give the command that rebuilds it"
    return match.group(1), match.group(2).split()[1:]


@pytest.mark.parametrize("table", sorted(glob.glob("results/*/table.md", root_dir=ROOT)))
def test_every_table_rebuilds_byte_for_byte_from_the_kept_runs(table, tmp_path):
    import collect
    folder, clock = rebuild_command(table)
    assert folder == os.path.dirname(table)
    copy = tmp_path / os.path.basename(folder)
    shutil.copytree(os.path.join(ROOT, folder, "runs"), copy / "runs")
    command = "python tools/collect.py " + folder + ("" if not clock else f" --clock {clock[0]}")
    rebuilt = collect.text(collect.load(str(copy), clock[0] if clock else None), command,
                           collect.reach_of(os.path.join(ROOT, folder)))     # tools/world.py's
    assert rebuilt == read(table), f"{table} does not match its kept runs: rebuild it"


def test_the_lesson_picture_rebuilds_from_the_kept_ladder_runs(tmp_path):
    """results/lesson.png is what `python tools/lesson.py` draws: its samples are the ladder's
    kept samples, pixel for pixel, and so is the rest (names, objectives, layout). Pixels, not
    bytes: the PNG's compression may differ between library versions."""
    import lesson
    from matplotlib.image import imread

    def pixels(path):                                                   # (H, W, 4) uint8
        return (imread(path) * 255).round().astype("uint8")
    kept = pixels(lesson.PICTURE)
    samples = lesson.save_lesson(str(tmp_path / "lesson.png"))
    rebuilt = pixels(str(tmp_path / "lesson.png"))
    height, width = samples.shape[:2]
    placed = kept[lesson.TOP:lesson.TOP + height, lesson.LEFT:lesson.LEFT + width, :3]
    assert kept.shape == rebuilt.shape and (placed == samples).all(), (
        "results/lesson.png does not hold the kept runs' samples: python tools/lesson.py")
    assert (kept == rebuilt).all(), "results/lesson.png is out of date: python tools/lesson.py"


def test_the_front_pages_line_references_point_at_their_functions():
    """README's `file.py:N` `name` pairs: line N of file.py defines name."""
    references = re.findall(r"`(\w+\.py):(\d+)` `(\w+)`", read("README.md"))
    assert len(references) >= 8, "the table of where each objective lives"
    for path, line, name in references:
        source = read(path).splitlines()
        defines = re.compile(rf"\s*(def|class) {name}\b")
        actual = [i + 1 for i, text in enumerate(source) if defines.match(text)]
        assert int(line) in actual, (f"README: {path}:{line} is not where {name} is defined; "
                                     f"it is at {actual}")


@pytest.mark.parametrize("table", sorted(glob.glob("results/*/inside.md", root_dir=ROOT)))
def test_every_inside_table_rebuilds_byte_for_byte_from_the_kept_runs(table, tmp_path):
    import inside_summary
    folder = os.path.dirname(table)
    command = f"Rebuilt by `python tools/inside_summary.py {folder}`"
    assert read(table).startswith(command)
    copy = tmp_path / os.path.basename(folder)
    shutil.copytree(os.path.join(ROOT, folder, "runs"), copy / "runs")
    assert inside_summary.text(str(copy))[0] == read(table), f"{table}: rebuild it"


def test_the_front_pages_result_table_is_the_ladders():
    """Every row `python tools/collect.py results/ladder --summary` prints is on the front page."""
    import collect
    import collect_tables
    readme = read("README.md")
    rows = collect_tables.summary(collect.load(os.path.join(ROOT, "results", "ladder"), None))
    missing = [row for row in rows if row not in readme]
    assert not missing, f"README's result table is stale; these rows are not on it: {missing}"


# ------------------------------------------------------- every number names the file it is in
# A decimal number on the front page (outside code: fenced blocks and `spans` are not read) must
# be printed, as it is, in a table or metrics file that its own paragraph, list item or table
# names (a link, or a path in backticks; a folder names its files), or in a table named anywhere
# in its section. A README is prose, not a table: it backs nothing. A paper's arXiv number and
# a Python version are names, not measurements.
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?!\w|\.\d)")          # 58.3, 0.00; not T0.5, 3.11.2
A_NAME = re.compile(r"(arXiv:?|Python ?(≥|>=)?) ?$")                  # what stands before a name
BACKING = (".md", ".jsonl", ".json", ".csv", ".txt")


def blocks(markdown):
    """[(section, first line, text)]: headings, paragraphs, list items and tables, in order,
    fenced code blocks left out; section counts the headings above."""
    found, lines, section, start, fenced = [], [], 0, 0, False

    def close():
        if lines:
            found.append((section, start, "\n".join(lines)))
            lines.clear()
    for number, line in enumerate(markdown.splitlines(), 1):
        if line.lstrip().startswith("```"):
            close()
            fenced = not fenced
            continue
        if fenced:
            continue
        if not line.strip():
            close()
            continue
        heading = line.startswith("#")
        item = re.match(r"\s*([-*+]|\d+\.)\s", line)
        row = line.lstrip().startswith("|")
        if heading or item or (lines and row != lines[-1].lstrip().startswith("|")):
            close()
        section += bool(heading)
        if not lines:
            start = number
        lines.append(line)
        if heading:
            close()
    close()
    return found


def named_files(text, base):
    """The table and metrics files a block names: links, and paths in backticks (a word with a
    '/' or a file's ending); a folder stands for the files in it."""
    targets = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'src="([^"]+)"', text)
    for span in re.findall(r"`([^`]+)`", text):
        targets += [word for word in span.split() if "/" in word or word.endswith(BACKING)]
    files = []
    for target in targets:
        path = os.path.normpath(os.path.join(base, re.sub(r"(#.*|:[\d-]+)$", "", target)))
        if os.path.isdir(path):
            files += [os.path.join(path, name) for name in sorted(os.listdir(path))]
        else:
            files.append(path)
    return [f for f in dict.fromkeys(files) if f.endswith(BACKING)
            and os.path.basename(f) != "README.md" and os.path.isfile(f)]


def prose(text):
    """The text with code spans, link targets and HTML tags blanked (lines kept in place)."""
    def blank(match):
        return re.sub(r"[^\n]", " ", match.group(0))
    for pattern in (r"`[^`]*`", r"\]\([^)]*\)", r"<[^>]*>"):
        text = re.sub(pattern, blank, text)
    return text


def printed_in(number, text):
    return re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", text) is not None


def unbacked_numbers(path=None):
    """Every decimal number of a markdown file (README.md by default) that no file named beside
    it prints: ['README.md:93 58.3 (looked in results/tokenizers/table.md)', ...]."""
    path = path or os.path.join(ROOT, "README.md")
    with open(path, encoding="utf-8") as f:
        parts = blocks(f.read())
    base = os.path.dirname(path)
    named = [named_files(text, base) for _, _, text in parts]
    tables = {}                                                   # section -> its named tables
    for (section, _, _), files in zip(parts, named):
        tables.setdefault(section, []).extend(f for f in files if f.endswith(".md"))
    contents, unbacked = {}, []
    for (section, start, text), files in zip(parts, named):
        where = list(dict.fromkeys(files + tables[section]))
        for match in DECIMAL.finditer(prose(text)):
            if A_NAME.search(text[:match.start()]):
                continue
            number, line = match.group(0), start + text[:match.start()].count("\n")
            for file in where:
                if file not in contents:
                    with open(file, encoding="utf-8") as f:
                        contents[file] = f.read()
            if not any(printed_in(number, contents[file]) for file in where):
                looked = ", ".join(os.path.relpath(f, base) for f in where) or "no file named"
                unbacked.append(f"{os.path.basename(path)}:{line} {number} (looked in {looked})")
    return unbacked


def test_the_number_guard_reads_what_is_named_beside_each_number(tmp_path):
    """The guard on a small page: a number is backed by a file its own paragraph, list item or
    table names, or by a table its section names; not by a neighbour's file, another section's
    table, a README, or a longer number; numbers in code and link targets are not read."""
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "table.md").write_text("| a | 58.3 ± 1.7 | 0.00 |\n")
    (tmp_path / "t" / "README.md").write_text("99.1 8.3\n")
    (tmp_path / "m.jsonl").write_text('{"loss": 0.902}\n')
    (tmp_path / "README.md").write_text("""# Title

Read 58.3 in [it](t/table.md) and 0.902 in `m.jsonl`; arXiv 2510.03075, Python ≥ 3.11.
0.902 again in the same paragraph.

0.902 in the next paragraph, alone.

- 0.00 and 1.7 by the section's table; 99.1 and 8.3 by nothing ([r](t/README.md)); `9.9` is code
- 0.902 in `m.jsonl`
- 0.902 in the next item, alone

```
12.5 in a code block
```

## Other

58.3 again, 0.902 right above a table; a link [x](runs/0.5/a.png)
| 7.5 | `m.jsonl` |

- a list item
  that goes on: 0.902 `m.jsonl`
""")
    assert unbacked_numbers(str(tmp_path / "README.md")) == [
        "README.md:6 0.902 (looked in t/table.md)",
        "README.md:8 99.1 (looked in t/table.md)", "README.md:8 8.3 (looked in t/table.md)",
        "README.md:10 0.902 (looked in t/table.md)",
        "README.md:18 58.3 (looked in no file named)",
        "README.md:18 0.902 (looked in no file named)",
        "README.md:19 7.5 (looked in m.jsonl)"]


def test_every_decimal_number_on_the_front_page_is_in_a_file_named_beside_it():
    unbacked = unbacked_numbers()
    if not FRONT_PAGE_NUMBERS_NAME_THEIR_FILES:
        pytest.skip(f"switched off: {len(unbacked)} unbacked numbers on README.md")
    assert not unbacked, ("decimal numbers on README.md that no table or metrics file named in "
                          "their paragraph, list item, table or section prints: "
                          + "; ".join(unbacked))


# The first screen teaches: the question, the answer above the lesson picture, and the picture by
# line 12; the page's numbers are the few that carry it (the result table's about 22 of them), no
# spreads: each question links the table that holds the rest.
FIRST_SCREEN = 12
FRONT_PAGE_DECIMALS = 40


def test_the_front_page_shows_the_answer_and_its_picture_first_and_few_numbers():
    readme = read("README.md")
    lines = readme.splitlines()
    picture = next(n for n, line in enumerate(lines, 1) if line.startswith("!["))
    assert picture <= FIRST_SCREEN and "results/lesson.png" in lines[picture - 1], (
        f"README's first picture is at line {picture}: the lesson picture belongs by line "
        f"{FIRST_SCREEN}, controls and numbers below it")
    assert any(line.startswith("**The answer") for line in lines[:picture]), (
        "README: the answer stands above the lesson picture")
    outside_code = "\n".join(text for _, _, text in blocks(readme))
    decimals = DECIMAL.findall(outside_code)
    assert len(decimals) <= FRONT_PAGE_DECIMALS, (
        f"README holds {len(decimals)} decimal numbers outside code blocks, more than "
        f"{FRONT_PAGE_DECIMALS}: keep the one or two that carry each question, link the rest")
    assert "±" not in outside_code, "README: spreads (±) belong in the report's tables"


# ---------------------------------------------------------------- every kept run's provenance
def kept_runs():
    """Every kept run folder with its config: [('results/ladder/runs/dit', config)]."""
    configs = sorted(glob.glob("results/*/runs/*/config.json", root_dir=ROOT))
    return [(os.path.dirname(path), json.loads(read(path))) for path in configs]


def test_every_kept_run_records_its_provenance():
    """Each kept run names the commit, libraries, threads and hardware it ran on, clean of
    uncommitted changes, so any number of the report can be rebuilt at its commit; a resampled run
    also records its sampling's."""
    missing = [folder for folder, config in kept_runs()
               if not (config.get("provenance") or {}).get("commit")
               or config["provenance"]["uncommitted_changes"]
               or ("resampled_from" in config and not config.get("resample_provenance"))]
    assert not missing, f"kept runs whose config.json records no clean provenance: {missing}"


def test_the_same_command_run_twice_on_one_machine_repeats_bit_for_bit():
    """results/ladder/repeat/maskgit is `python maskgit.py` run beside the ladder's seed-0 run, on
    the same machine, commit and threads: every evaluation's readings are the same, wall time
    aside (the report's provenance paragraph rests on this)."""
    def metrics(folder):
        with open(os.path.join(ROOT, folder, "metrics.jsonl")) as f:
            return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in f]
    first = metrics("results/ladder/runs/maskgit")
    assert len(first) == 7
    for again in ("maskgit", "maskgit-again"):        # beside it; alone, in a fresh start
        assert metrics(f"results/ladder/repeat/{again}") == first, again
        config = json.loads(read(f"results/ladder/repeat/{again}/config.json"))
        kept = json.loads(read("results/ladder/runs/maskgit/config.json"))
        assert config["provenance"] == kept["provenance"]


# ------------------------------------------------------- the report's summary and its seeds
# The report opens with its answer and one line per question. A question's line links its folder
# and says how many seeds its settings have, fewest–most: "([ladder/](ladder/table.md), 3 seeds)",
# "([recipe/](recipe/table.md), 1–3 seeds)". A summary is at most 15 lines, its title included.
SUMMARY_LINES = 15
SEED_CLAIM = re.compile(r"\]\((?P<folder>[\w.-]+)/[\w.-]+\.md\), (?P<few>\d+)(?:–(?P<most>\d+))? "
                        r"seeds?\b")


def summary_of(report):
    """The report's opening: its lines before the first section (`## `)."""
    lines = report.splitlines()
    return lines[:next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))]


def seed_mismatches(results):
    """Every way the summary of results/README.md misstates its seeds: a line whose fewest–most
    seeds are not its folder's runs' (collect.load's settings); a folder of runs with no line."""
    import collect
    claims = {}
    for line in summary_of(open(os.path.join(results, "README.md"), encoding="utf-8").read()):
        for match in SEED_CLAIM.finditer(line):
            few = int(match["few"])
            claims[match["folder"]] = (few, int(match["most"] or few))
    wrong = []
    for folder in sorted(os.listdir(results)):
        if not os.path.isdir(os.path.join(results, folder, "runs")):
            continue
        counts = sorted({len(members) for members in
                         collect.load(os.path.join(results, folder), None).values()})
        if folder not in claims:
            wrong.append(f"{folder}: no summary line says its seeds ({counts[0]}–{counts[-1]})")
        elif claims[folder] != (counts[0], counts[-1]):
            wrong.append(f"{folder}: the summary says {claims[folder][0]}–{claims[folder][1]} "
                         f"seeds, its runs have {counts[0]}–{counts[-1]}")
    wrong += [f"{folder}: a summary line names a folder with no runs" for folder in claims
              if not os.path.isdir(os.path.join(results, folder, "runs"))]
    return wrong


def test_the_seed_guard_reads_each_folders_runs(tmp_path):
    """On a small report: a folder's seeds are its settings' fewest–most; a line that says
    otherwise, a folder with no line and a line for a folder without runs are each found."""
    def run(folder, name, seed, **settings):
        kept = tmp_path / folder / "runs" / name
        kept.mkdir(parents=True)
        (kept / "config.json").write_text(json.dumps({"model": "dit", "seed": seed, **settings}))
        (kept / "metrics.jsonl").write_text('{"step": 1}\n')
        (kept / "samples.npz").write_bytes(b"")
    for seed in (0, 1, 2):
        run("ladder", f"dit-seed{seed}", seed)
    run("recipe", "dit", 0)
    run("recipe", "dit-lr", 0, lr=1e-3)
    run("recipe", "dit-lr-seed1", 1, lr=1e-3)
    run("objects", "dit", 0)
    (tmp_path / "README.md").write_text(
        "# The report\n\n**The answer.**\n\n"
        "- **Ladder** ([ladder/](ladder/table.md), 3 seeds): ...\n"
        "- **Recipe** ([recipe/](recipe/table.md), 1–3 seeds): ...\n"
        "- **Costs** ([costs/](costs/timings.md), 2 seeds): ...\n\n"
        "## The ladder ([objects/](objects/table.md), 1 seed)\n")
    assert seed_mismatches(str(tmp_path)) == [
        "objects: no summary line says its seeds (1–1)",
        "recipe: the summary says 1–3 seeds, its runs have 1–2",
        "costs: a summary line names a folder with no runs"]


def test_the_reports_summary_is_its_answer_and_states_each_questions_seeds():
    assert len(summary_of(read("results/README.md"))) <= SUMMARY_LINES, (
        f"results/README.md opens with more than {SUMMARY_LINES} lines before its first section")
    wrong = seed_mismatches(os.path.join(ROOT, "results"))
    assert not wrong, "; ".join(wrong)


def test_the_objects_table_gives_each_seeds_readings_at_every_evaluation():
    """collect_tables.over_training: per setting and step, each seed's exact and found (%) and
    extra discs per sample, each the mean over the numbers asked in its span (1-3, 4 and more)."""
    import collect_tables

    def evaluation(step, exact, found, extra):
        return {"step": step, **{key: {str(n): value(n) for n in range(6)} for key, value in
                                 (("exact", exact), ("found", found), ("extra", extra))}}
    first = [evaluation(10, lambda n: n / 10, lambda n: 1.0, lambda n: n),
             evaluation(20, lambda n: 0.5, lambda n: 0.9, lambda n: 0.0)]
    second = [evaluation(10, lambda n: 0.0, lambda n: 0.25 * (n > 3), lambda n: 1.0)]
    groups = {"objects.py --cond one": [("a", {}, first), ("b", {}, second)]}
    lines = collect_tables.over_training(groups, list(range(6)))
    assert "| setting | step | 1-3 asked: exact | 1-3 asked: found | 1-3 asked: extra | " \
           "4-5 asked: exact | 4-5 asked: found | 4-5 asked: extra |" in lines
    assert lines[-1] == ("| `objects.py --cond one` | 10 | 20.0 / 0.0 | 100.0 / 0.0 | "
                         "2.00 / 1.00 | 45.0 / 0.0 | 100.0 / 25.0 | 4.50 / 1.00 |")
