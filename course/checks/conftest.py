"""The course checks import the repository in COURSE_DIR (a student copy), or the one they
sit in. They run on a CPU in float32, and supply their own masks, noise and stub models.

With --brief (course/check.py passes it, with --tb=no) each failed check is reported in a
few lines: what it checks, the message of its failure (expected and got), and which
function to look at; a function still blanked reads as "not written yet: dit.py::noisy"."""
import os
import re
import sys
import textwrap

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.environ.get("COURSE_DIR", os.path.join(HERE, "..", "..")))
sys.path.insert(0, ROOT)
sys.path.append(os.path.dirname(HERE))                                   # course/check.py
torch.set_num_threads(min(2, torch.get_num_threads()))

import check  # noqa: E402

ASSIGNMENTS = check.load_assignments()
WIDTH, LINES = 96, 3                        # a failure message: at most 3 lines of 96 characters
FAILED = []                                 # (check in words, where to look, message lines)


def pytest_addoption(parser):
    parser.addoption("--brief", action="store_true",
                     help="a few lines for each failed check (course/check.py)")


def pytest_configure(config):
    for name, assignment in ASSIGNMENTS.items():
        config.addinivalue_line("markers", f"{name.lower()}: {assignment['title']}")


def wrap(text):
    """text in at most LINES lines of WIDTH characters, cut short with ' ...' beyond."""
    lines = textwrap.wrap(" ".join(text.split()), WIDTH) or ["(no message)"]
    if len(lines) > LINES:
        rest = textwrap.shorten(" ".join(lines[LINES - 1:]), WIDTH, placeholder=" ...")
        lines = [*lines[:LINES - 1], rest]
    return lines


def message(excinfo):
    """The failure in at most LINES lines: the check's own message, not pytest's value dumps."""
    error = excinfo.value
    blanked = re.search(r"\bA\d+: write (\S+::\S+)", str(error))
    if isinstance(error, NotImplementedError) and blanked:
        return [f"not written yet: {blanked.group(1)}"]
    text = str(error).strip()
    if isinstance(error, AssertionError):               # "message\nassert ...": the message
        return wrap(re.split(r"(?:^|\n)assert ", text)[0] or text.splitlines()[0])
    mine = [entry for entry in excinfo.traceback if str(entry.path).startswith(ROOT + os.sep)
            and not str(entry.path).startswith(os.path.dirname(HERE) + os.sep)]
    where = ""
    if mine:                                                # the student's line that raised
        entry = mine[-1]
        where = (f" (raised at {os.path.relpath(entry.path, ROOT)} line {entry.lineno + 1}, "
                 f"in {entry.name})")
    return wrap(f"{type(error).__name__}: {text}{where}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if report.failed and call.excinfo is not None and item.config.getoption("brief"):
        name = next((name for name in ASSIGNMENTS if item.get_closest_marker(name.lower())), None)
        found = check.checks_of(ASSIGNMENTS[name]) if name else []
        checks = {test: (words, look) for test, words, look in found}
        words, look = checks.get(item.originalname, (item.name, []))
        if hasattr(item, "callspec"):                       # a parametrized check: which case
            words += f" [{item.callspec.id}]"
        FAILED.append((words, look, message(call.excinfo)))


def pytest_collectreport(report):
    if report.failed:                                                     # the code does not import
        text = str(report.longrepr)
        error = ([line[1:].strip() for line in text.splitlines() if line.startswith("E ")][-1:]
                 or ["an error"])
        found = re.findall(r'File "(.+?)", line (\d+)|^(\S+\.py):(\d+): in', text, re.MULTILINE)
        places = [(os.path.abspath(path or relative), line or relative_line)
                  for path, line, relative, relative_line in found]
        mine = [(path, line) for path, line in places if path.startswith(ROOT + os.sep)
                and not path.startswith(os.path.dirname(HERE) + os.sep)]
        where = f" (at {os.path.relpath(mine[-1][0], ROOT)} line {mine[-1][1]})" if mine else ""
        FAILED.append(("the checks could not import your code", [], wrap(error[0] + where)))


def pytest_terminal_summary(terminalreporter, config):
    if not config.getoption("brief") or not FAILED:
        return
    write = terminalreporter.write_line
    for words, look, lines in FAILED:
        write(f"FAILED  {words}")
        for line in lines:
            write(f"    {line}")
        if look and not lines[0].startswith("not written yet"):
            write(f"    look at {', '.join(look)}")
    name = config.getoption("markexpr").upper() or "A?"                # check.py selects by marker
    has_sheet = os.path.isfile(os.path.join(ROOT, check.TASK))
    sheet = f"{check.TASK} says what each check wants; " if has_sheet else ""
    write(f"{sheet}every failure in full: python course/check.py {name} --full")
