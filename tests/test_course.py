"""The course kit: every check passes on the repository and fails on the student copy of its
own assignment; student copies import; the commands refuse bad input."""
import concurrent.futures
import os
import re
import subprocess
import sys
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COURSE = os.path.join(ROOT, "course")
with open(os.path.join(COURSE, "assignments.toml"), "rb") as f:
    ASSIGNMENTS = tomllib.load(f)


def python(*args, cwd=ROOT):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def summary(output):
    """(passed, failed) from pytest's last line."""
    count = lambda word: int(m.group(1)) if (m := re.search(rf"(\d+) {word}", output.strip().splitlines()[-1])) else 0
    return count("passed"), count("failed")


def test_every_check_passes_on_the_repository():
    result = python("-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(COURSE, "checks"))
    passed, failed = summary(result.stdout)
    assert result.returncode == 0 and failed == 0 and passed >= 3 * len(ASSIGNMENTS), result.stdout[-3000:]


def test_every_assignment_has_a_marked_check_file_and_real_functions():
    for name, assignment in ASSIGNMENTS.items():
        source = open(os.path.join(ROOT, assignment["checks"])).read()
        assert f"pytestmark = pytest.mark.{name.lower()}" in source, name
        for key in ("title", "functions", "run", "hours", "goal"):
            assert key in assignment, f"{name}: no {key}"


def student_copy(name, folder):
    """make_student.py, then the copy's own check.py, as a teacher and a student run them."""
    made = python(os.path.join(COURSE, "make_student.py"), name, "--out", str(folder))
    checked = python(str(folder / "course" / "check.py"), name, cwd=folder) if made.returncode == 0 else None
    return made, checked


@pytest.fixture(scope="module")
def student_copies(tmp_path_factory):
    """Every assignment's student copy, made and checked two at a time (the CI machine has 2 cores)."""
    root = tmp_path_factory.mktemp("students")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(student_copy, name, root / name) for name in ASSIGNMENTS}
    return {name: (root / name, *future.result()) for name, future in futures.items()}


@pytest.mark.parametrize("name", list(ASSIGNMENTS))
def test_the_checks_fail_on_the_student_copy(name, student_copies):
    out, made, result = student_copies[name]
    assert made.returncode == 0, made.stderr[-2000:]                      # make_student checks that it imports
    for spec in ASSIGNMENTS[name]["functions"]:
        path, qualname = spec.split("::")
        assert f"{name}: write {path}::{qualname}" in (out / path).read_text(), spec
    assert not (out / "course" / "ANSWERS.md").exists() and not (out / "course" / "mutations.py").exists()
    passed, failed = summary(result.stdout)
    assert result.returncode != 0 and passed == 0 and failed >= 3, result.stdout[-3000:]
    assert "NotImplementedError" in result.stdout


def test_identical_copies_are_blanked_in_the_other_generators(student_copies):
    out = student_copies["A4"][0]
    for path in ("dit.py", "maskgit.py", "givt.py", "mar.py"):
        text = (out / path).read_text()
        assert f"A4: write {path}::Block.forward" in text and f"A4: write {path}::modulate" in text, path
    assert "x * (1 + scale) + shift" not in (out / "maskgit.py").read_text()


def test_bad_input_is_refused(tmp_path):
    result = python(os.path.join(COURSE, "make_student.py"), "A99", "--out", str(tmp_path / "x"))
    assert result.returncode != 0 and "unknown assignment 'A99'; choose from A1" in result.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("mine")
    result = python(os.path.join(COURSE, "make_student.py"), "A1", "--out", str(tmp_path / "full"))
    assert result.returncode != 0 and "is not empty" in result.stderr
    result = python(os.path.join(COURSE, "check.py"), "A99")
    assert result.returncode == 2 and "invalid choice: 'A99'" in result.stderr
    result = python(os.path.join(COURSE, "check.py"), "A1", "--dir", str(tmp_path))
    assert result.returncode == 2 and "no data.py there" in result.stderr


def test_the_training_run_is_judged_on_the_seen_compositions(tmp_path, monkeypatch):
    """check.py --run's plumbing on a 2-step run (the real runs take minutes: see course/README.md)."""
    sys.path.insert(0, COURSE)
    import check
    tiny = {"command": "dit.py --steps 2 --eval-every 2 --samples-per-comp 2 --batch-size 8 --device cpu "
                       "--train-per-comp 100", "reading": "probe_acc", "pass_seen": 0.0}
    monkeypatch.chdir(tmp_path)
    for name in ("data.py", "probe.py", "runs.py", "dit.py", ".cache"):                # .cache: the fitted probe
        if os.path.exists(os.path.join(ROOT, name)):
            os.symlink(os.path.join(ROOT, name), tmp_path / name)
    seen = check.training_run("A3", {"run": tiny}, str(tmp_path))
    assert seen is not None and 0 <= seen <= 1
    assert len(list((tmp_path / "runs").glob("course-A3-*/metrics.jsonl"))) == 1
