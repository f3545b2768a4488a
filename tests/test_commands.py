"""Every command the documentation gives runs at its path: each `python <script> --flag ...` on the
front page, in the report and its pages, in the course and the tests' page names a file that is
there and flags its script takes, and each assignment's run command too."""
import contextlib
import glob
import importlib.util
import io
import os
import re
import shlex
import sys
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENTS = (["README.md", "results/README.md", "course/README.md", "course/ANSWERS.md",
              "tests/README.md"] + sorted(glob.glob("results/*/README.md", root_dir=ROOT)))
NO_FLAGS = {"tests/mutations.py"}      # takes names of files and assignments, not flags
COMMAND = re.compile(r"python (?!-m )([\w./-]+\.py)((?: +[^`|;&<>#\n]*)?)")
_HELP = {}


def commands(text):
    """[(script, [flags])] of every `python <script> ...` in a text, code blocks and inline code."""
    found = []
    for script, rest in COMMAND.findall(text):
        try:
            words = shlex.split(rest)
        except ValueError:                                       # an unclosed quote in prose
            words = rest.split()
        found.append((script, [w.split("=")[0] for w in words if w.startswith("--")]))
    return found


def help_of(script):
    """What `python <script> --help` prints, by the script's own main() in this process."""
    if script not in _HELP:
        spec = importlib.util.spec_from_file_location(
            "documented_" + re.sub(r"\W", "_", script), os.path.join(ROOT, script))
        module = importlib.util.module_from_spec(spec)
        here = os.path.dirname(os.path.join(ROOT, script))            # as `python <script>` has it
        sys.path.insert(0, here)
        try:
            spec.loader.exec_module(module)
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed), pytest.raises(SystemExit):
                module.main(["--help"])
        finally:
            sys.path.remove(here)
        _HELP[script] = printed.getvalue()
    return _HELP[script]


def test_the_command_finder_reads_scripts_and_their_flags():
    text = ("run `python dit.py --cond discrete` or\n```bash\npython tools/collect.py results/x "
            "--add runs/a runs/b   # keep\npython -m pytest -q tests\n```\n"
            "| `python studies/ar.py --head gmm --tokenizer=codebook` |")
    assert commands(text) == [("dit.py", ["--cond"]), ("tools/collect.py", ["--add"]),
                              ("studies/ar.py", ["--head", "--tokenizer"])]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_documented_command_names_a_script_that_is_there_and_flags_it_takes(document):
    text = open(os.path.join(ROOT, document), encoding="utf-8").read()
    missing = []
    for script, flags in commands(text):
        if not os.path.isfile(os.path.join(ROOT, script)):
            missing.append(f"{script} (no such file)")
            continue
        if script not in NO_FLAGS:
            said = help_of(script)
            missing += [f"{script} {flag}" for flag in flags if flag not in said]
    assert not missing, f"{document}: {missing}"


def test_every_assignments_run_command_is_a_script_with_its_flags():
    with open(os.path.join(ROOT, "course", "assignments.toml"), "rb") as f:
        assignments = tomllib.load(f)
    for name, assignment in assignments.items():
        script, *rest = shlex.split(assignment["run"]["command"])
        assert os.path.isfile(os.path.join(ROOT, script)), (name, script)
        said = help_of(script)
        assert all(flag in said for flag in rest if flag.startswith("--")), (name, rest)
