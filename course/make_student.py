"""Write a student copy of the repository with one assignment's functions blanked.

    python course/make_student.py A3 --out ../a3-student

Each listed function keeps its signature and docstring; its body becomes
`raise NotImplementedError("A3: ...")`. A function with the same name and the same source
text in another file is blanked too, so the answer is not sitting in the next file (the
generators share their backbone on purpose). The copy holds every tracked file except
the answers (course/ANSWERS.md, course/mutations.py); it is checked to import before this
script returns.
"""
import argparse
import ast
import os
import shutil
import subprocess
import sys
import tomllib

COURSE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(COURSE)
MODULES = ["data.py", "probe.py", "runs.py", "dit.py", "maskgit.py", "givt.py", "mar.py", "jepa_maskgit.py"]
NOT_FOR_STUDENTS = {"course/ANSWERS.md", "course/mutations.py"}   # answers; correct lines


def load_assignments():
    with open(os.path.join(COURSE, "assignments.toml"), "rb") as f:
        return tomllib.load(f)


def find_function(tree, qualname):
    """The def node of 'name' or 'Class.method' at the top level of a module, or None."""
    nodes, found = tree.body, None
    for part in qualname.split("."):
        found = next((n for n in nodes if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part), None)
        if found is None:
            return None
        nodes = found.body
    return found if isinstance(found, ast.FunctionDef) else None


def function_text(source, node):
    lines = source.splitlines(keepends=True)
    start = (node.decorator_list[0] if node.decorator_list else node).lineno
    return "".join(lines[start - 1:node.end_lineno])


def blank(source, node, message):
    """source with node's body replaced by its docstring (if any) and a raise."""
    lines = source.splitlines(keepends=True)
    body = node.body
    has_docstring = isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
        and isinstance(body[0].value.value, str)
    keep_until = body[0].end_lineno if has_docstring else body[0].lineno - 1    # lines kept, 1-based
    indent = " " * body[0].col_offset
    if body[0].lineno == node.lineno:                                           # `def f(): return x`
        raise ValueError(f"{node.name}: a one-line function cannot be blanked; give it its own body lines")
    replacement = f"{indent}raise NotImplementedError({message!r})\n"
    return "".join(lines[:keep_until]) + replacement + "".join(lines[node.end_lineno:])


def blanked_sources(root, name, functions):
    """{file: new source} for the assignment's functions and their identical copies."""
    sources = {path: open(os.path.join(root, path)).read() for path in MODULES}
    trees = {path: ast.parse(source) for path, source in sources.items()}
    targets = {}                                                                # file -> [qualname]
    for spec in functions:
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
                targets.setdefault(other, []).append(qualname)
    new = {}
    for path, qualnames in targets.items():
        source = sources[path]
        nodes = {qualname: find_function(trees[path], qualname) for qualname in qualnames}
        # bottom to top: blanking a later function leaves the earlier ones' line numbers as they were
        for qualname, node in sorted(nodes.items(), key=lambda item: -item[1].lineno):
            source = blank(source, node, f"{name}: write {path}::{qualname} (see course/README.md)")
        new[path] = source
    return new, targets


def tracked_files(root):
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout
        return [path for path in listed.splitlines() if os.path.isfile(os.path.join(root, path))]
    except (OSError, subprocess.CalledProcessError):                        # not a git clone: walk it
        skip, paths = {".git", "runs", ".cache", "__pycache__", ".pytest_cache"}, []
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in skip]
            paths += [os.path.relpath(os.path.join(folder, f), root) for f in files]
        return paths


def make_student(name, out, root=ROOT):
    assignments = load_assignments()
    if name not in assignments:
        raise SystemExit(f"unknown assignment {name!r}; choose from {', '.join(assignments)}")
    if os.path.exists(out) and os.listdir(out):
        raise SystemExit(f"{out} exists and is not empty; give a new --out")
    new, targets = blanked_sources(root, name, assignments[name]["functions"])
    for path in tracked_files(root):
        if path in NOT_FOR_STUDENTS:
            continue
        os.makedirs(os.path.dirname(os.path.join(out, path)) or out, exist_ok=True)
        if path in new:
            with open(os.path.join(out, path), "w") as f:
                f.write(new[path])
        else:
            shutil.copy2(os.path.join(root, path), os.path.join(out, path))
    if os.path.isdir(os.path.join(root, ".cache")):                          # fitted tokenizers and probe
        shutil.copytree(os.path.join(root, ".cache"), os.path.join(out, ".cache"), dirs_exist_ok=True)
    modules = ", ".join(path[:-3] for path in MODULES)
    imported = subprocess.run([sys.executable, "-c", f"import {modules}"], cwd=out, capture_output=True, text=True)
    if imported.returncode != 0:
        raise SystemExit(f"the student copy in {out} does not import:\n{imported.stderr[-2000:]}")
    return targets


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("assignment", help="A1 ... A8, as in course/assignments.toml")
    parser.add_argument("--out", required=True, help="an empty or new folder for the student copy")
    args = parser.parse_args(argv)
    targets = make_student(args.assignment, args.out)
    blanked = "; ".join(f"{path}: {', '.join(names)}" for path, names in sorted(targets.items()))
    print(f"{args.assignment}: wrote {args.out}; blanked functions in {blanked}")
    print(f"the student checks their work with: python course/check.py {args.assignment}")


if __name__ == "__main__":
    main()
