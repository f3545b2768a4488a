"""Write a student copy of the repository with one assignment's functions blanked.

    python course/make_student.py A3 --out ../a3-student

Each listed function keeps its signature and docstring; its body becomes
`raise NotImplementedError("A3: ...")`, and the comment lines right above it (notes on how
it works) go with the body. A function with the same name and the same source text in
another file is blanked too, so the answer is not sitting in the next file (the generators
share their backbone on purpose), and so are other functions that restate this one's answer
(`also_blanked`: another assignment's, or a helper of a script). The copy holds what the
student runs (HANDOUT: the scripts, the assignment's checks, check.py) and a task sheet,
TASK.md, built from course/assignments.toml; it is checked to import before this script
returns.
Python 3.11 or newer.
"""
import argparse
import ast
import os
import re
import shutil
import subprocess
import sys

from check import READINGS, TASK, checks_of, load_assignments

COURSE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(COURSE)
MODULES = ["data.py", "captions.py", "tokenizers.py", "probe.py", "judge.py", "runs.py",
           "dit.py", "maskgit.py", "givt.py", "mar.py", "jepa_maskgit.py",
           "studies/__init__.py", "studies/maskgit_factored.py", "studies/ar.py",
           "studies/objects.py", "studies/inside.py", "worlds/__init__.py",
           "worlds/shapes2d_calibration.py", "worlds/objects_world.py", "worlds/shapes3d.py",
           "worlds/clips.py", "worlds/bars.py"]
# What a student copy holds (a path, or a folder ending in /): the scripts, the assignment's own
# check file (handout) and what it runs; worlds/shapes2d_calibration.py for `python judge.py`,
# tests/test_ladder.py (and tests/scripts.py, which finds a script) for the pasted copies. Not:
# the answers (course/ANSWERS.md, tests/mutations.py, the other assignments' checks), the
# teachers' page, results/, tools/.
HANDOUT = [*MODULES, "README.md", "requirements.txt", ".gitignore", "course/check.py",
           "course/assignments.toml", "course/checks/conftest.py", "tests/conftest.py",
           "tests/scripts.py", "tests/test_ladder.py"]
RULE = re.compile(r"#\s*-{4,}")       # a section rule, `# ---- sampling`: kept above a blank


def find_function(tree, qualname):
    """The def node of 'name' or 'Class.method' at the top level of a module, or None."""
    nodes, found = tree.body, None
    for part in qualname.split("."):
        found = next((n for n in nodes if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                      and n.name == part), None)
        if found is None:
            return None
        nodes = found.body
    return found if isinstance(found, ast.FunctionDef) else None


def function_text(source, node):
    """The function's source as tests/test_ladder.py compares copies: decorators, and the
    comment that ends its last line, left out."""
    return ast.get_source_segment(source, node)


def blank(source, node, message):
    """source with node's body replaced by its docstring (if any) and a raise, and the comment
    lines right above the function (a section rule excepted) left out."""
    lines = source.splitlines(keepends=True)
    body = node.body
    has_docstring = (isinstance(body[0], ast.Expr)
                     and isinstance(getattr(body[0], "value", None), ast.Constant)
                     and isinstance(body[0].value.value, str))
    keep_until = body[0].end_lineno if has_docstring else body[0].lineno - 1   # kept, 1-based
    indent = " " * body[0].col_offset
    if body[0].lineno == node.lineno:                                       # `def f(): return x`
        raise ValueError(f"{node.name}: a one-line function cannot be blanked; "
                         "give it its own body lines")
    first = (node.decorator_list[0] if node.decorator_list else node).lineno - 1   # 0-based
    notes = first
    while (notes > 0 and lines[notes - 1].lstrip().startswith("#")
           and not RULE.match(lines[notes - 1].strip())):
        notes -= 1
    replacement = f"{indent}raise NotImplementedError({message!r})\n"
    return ("".join(lines[:notes] + lines[first:keep_until]) + replacement
            + "".join(lines[node.end_lineno:]))


def read(root, path):
    with open(os.path.join(root, path)) as f:
        return f.read()


def blanked_sources(root, name, functions, also=()):
    """{file: new source} for the assignment's functions and their identical copies, and for the
    functions in `also` (restating this one's answer elsewhere); {file: [qualname]}
    of what was blanked where for the student to write, and the same for `also`."""
    sources = {path: read(root, path) for path in MODULES}
    trees = {path: ast.parse(source) for path, source in sources.items()}
    targets, elsewhere = {}, {}                                             # file -> [qualname]
    for specs, found in ((functions, targets), (also, elsewhere)):
        for spec in specs:
            path, qualname = spec.split("::")
            if path not in sources:
                raise SystemExit(f"{name}: {spec}: no file {path} among {', '.join(MODULES)}")
            node = find_function(trees[path], qualname)
            if node is None:
                raise SystemExit(f"{name}: {spec}: no function {qualname} in {path}")
            text = function_text(sources[path], node)
            for other, source in sources.items():
                copy = find_function(trees[other], qualname)
                if copy is not None and (other == path or function_text(source, copy) == text):
                    found.setdefault(other, []).append(qualname)
    messages = {}                                                   # (file, qualname) -> message
    for found, said in ((elsewhere, ("{name}: {spec} restates {name}'s answer, so this copy "
                         "leaves it blank (see {task})")),
                        (targets, "{name}: write {spec} (see {task})")):
        for path, qualnames in found.items():
            for qualname in qualnames:
                messages[path, qualname] = said.format(name=name, spec=f"{path}::{qualname}",
                                                       task=TASK)
    new = {}
    for path in {path for path, _ in messages}:
        source, tree = sources[path], trees[path]
        nodes = {q: find_function(tree, q) for p, q in messages if p == path}
        # bottom to top: blanking a later function keeps the earlier ones' line numbers
        for qualname, node in sorted(nodes.items(), key=lambda item: -item[1].lineno):
            source = blank(source, node, messages[path, qualname])
        new[path] = source
    return new, targets, elsewhere


def lines_of(new, found):
    """{'file::qualname': its def's line in the copy} for a {file: [qualname]}."""
    return {f"{path}::{qualname}": find_function(ast.parse(new[path]), qualname).lineno
            for path, qualnames in found.items() for qualname in qualnames}


def task_sheet(name, assignment, new, targets, elsewhere):
    """TASK.md: what to write and where (with line numbers in the copy), what each check tests,
    how to run the checks and the training run, and the hint."""
    line, left = lines_of(new, targets), lines_of(new, elsewhere)
    run, reading = assignment["run"], READINGS[assignment["run"]["reading"]]
    copies = [spec for spec in line if spec not in assignment["functions"]]
    checks = checks_of(assignment)
    text = [f"# {name} \u2014 {assignment['title']}", "", assignment["goal"], "",
            (f"About {assignment['hours']} hours. Python 3.11 or newer with torch, numpy, "
            "matplotlib, tqdm and pytest (`pip install -r requirements.txt`); no GPU."), "",
            "## What to write", "",
            ("Each of these raises `NotImplementedError` until you write its body; its signature, "
            "its docstring and the hint below say what it takes and returns."), ""]
    text += [f"- `{spec}` (line {line[spec]})" for spec in assignment["functions"]]
    if copies:
        text += ["", ("The same functions sit, blanked the same way, in other files (the "
                 "generators share their backbone on purpose). Once the checks pass, paste your "
                 "answer into them; `python -m pytest tests/test_ladder.py` then confirms that "
                 "the copies match:"), ""]
        text += [f"- `{spec}` (line {line[spec]})" for spec in copies]
    if left:
        text += ["", ("Left blank as well, because they restate your answer: nothing here asks "
                 "you to write them, and what calls them does not run in this copy:"), ""]
        text += [f"- `{spec}`, at line {number}" for spec, number in left.items()]
    text += ["", f"## The checks: `python course/check.py {name}`", "",
             (f"{len(checks)} checks. A failed check says what it expected and what it got; "
             f"`python course/check.py {name} --full` shows pytest's full report."), ""]
    text += [f"- {words} (calls {', '.join(f'`{spec}`' for spec in look)})"
             for _, words, look in checks]
    text += ["", f"## The training run: `python course/check.py {name} --run`", "",
             (f"Once the checks pass, this trains `python {run['command']}` into "
             f"`runs/course-{name}-<time>/`, a real training run (far longer than the checks), "
             f"and the judge (`judge.py`) reads its samples {reading[0]}. It passes when at least "
             f"{100 * run['pass_seen']:.0f}% of them are read right ({reading[1]}). README.md "
             "describes the world, the judge and the models; the results/ and tools/ it "
             "mentions are not part of this copy."), "",
             "## Hint", "", assignment["hint"].strip(), ""]
    return "\n".join(text)


def listed_files(root):
    """The files a clone holds: tracked, and new ones git would track (not the ignored)."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                                cwd=root, capture_output=True, text=True, check=True).stdout
        return [path for path in listed.splitlines() if os.path.isfile(os.path.join(root, path))]
    except (OSError, subprocess.CalledProcessError):                    # not a git clone: walk it
        skip, paths = {".git", "runs", ".cache", "__pycache__", ".pytest_cache"}, []
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in skip]
            paths += [os.path.relpath(os.path.join(folder, f), root) for f in files]
        return paths


def handed_out(path, handout):
    return any(path == kept or kept.endswith("/") and path.startswith(kept) for kept in handout)


def make_student(name, out, root=ROOT):
    assignments = load_assignments()
    if name not in assignments:
        raise SystemExit(f"unknown assignment {name!r}; choose from {', '.join(assignments)}")
    if os.path.exists(out) and os.listdir(out):
        raise SystemExit(f"{out} exists and is not empty; give a new --out")
    assignment = assignments[name]
    new, targets, elsewhere = blanked_sources(root, name, assignment["functions"],
                                              assignment.get("also_blanked", ()))
    handout = [*HANDOUT, assignment["checks"]]
    for path in listed_files(root):
        if not handed_out(path, handout):
            continue
        os.makedirs(os.path.dirname(os.path.join(out, path)) or out, exist_ok=True)
        if path in new:
            with open(os.path.join(out, path), "w") as f:
                f.write(new[path])
        else:
            shutil.copy2(os.path.join(root, path), os.path.join(out, path))
    with open(os.path.join(out, TASK), "w") as f:
        f.write(task_sheet(name, assignment, new, targets, elsewhere))
    if os.path.isdir(os.path.join(root, ".cache")):                     # fitted tokenizers, probe
        shutil.copytree(os.path.join(root, ".cache"), os.path.join(out, ".cache"),
                        dirs_exist_ok=True)
    modules = ", ".join(path[:-3].replace("/__init__", "").replace("/", ".") for path in MODULES)
    imported = subprocess.run([sys.executable, "-c", f"import {modules}"], cwd=out,
                              capture_output=True, text=True, check=False)
    if imported.returncode != 0:
        raise SystemExit(f"the student copy in {out} does not import:\n{imported.stderr[-2000:]}")
    return targets


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    choices = ", ".join(load_assignments())
    parser.add_argument("assignment", help=f"one of {choices} (course/assignments.toml)")
    parser.add_argument("--out", required=True, help="an empty or new folder for the student copy")
    args = parser.parse_args(argv)
    targets = make_student(args.assignment, args.out)
    blanked = "; ".join(f"{path}: {', '.join(names)}" for path, names in sorted(targets.items()))
    print(f"{args.assignment}: wrote {args.out}; blanked functions in {blanked}")
    print(f"the task sheet is {os.path.join(args.out, TASK)}; the student checks their work "
          f"with: python course/check.py {args.assignment}")


if __name__ == "__main__":
    main()
