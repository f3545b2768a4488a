"""The whole suite runs in two halves, one beside the other (conftest.py): every file runs once,
the halves weigh about the same, and a failure in the half beside fails the session."""
import os
import shutil
import subprocess
import sys

import conftest

HERE = os.path.dirname(os.path.abspath(__file__))


def test_every_file_runs_in_exactly_one_half_and_the_halves_weigh_about_the_same():
    files = sorted(f for f in os.listdir(HERE) if f.startswith("test_") and f.endswith(".py"))
    here, beside = conftest.halves(files)
    assert sorted(here + beside) == files and here and beside
    weigh = [sum(conftest.SECONDS.get(f, 3) for f in half) for half in (here, beside)]
    assert abs(weigh[0] - weigh[1]) <= max(conftest.SECONDS.values()), weigh


def test_a_failure_in_the_half_beside_fails_the_session(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    shutil.copy(os.path.join(HERE, "conftest.py"), tests)
    for name, body in [("a", "1"), ("b", "1"), ("c", "1"), ("d", "2")]:
        (tests / f"test_{name}.py").write_text(f"def test_{name}():\n    assert {body} == 1\n")
    files = [f"test_{name}.py" for name in "abcd"]
    assert conftest.halves(files)[1][-1] == "test_d.py"                         # d runs beside
    env = {k: v for k, v in os.environ.items() if k != "TESTS_ONE_PROCESS"}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 1, ran.stdout[-2000:]
    assert "the other half, 2 files, beside" in ran.stdout and "FAILED" in ran.stdout
    assert "1 failed, 1 passed" in ran.stdout and "3 passed, 1 deselected" not in ran.stdout
    alone = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests/test_a.py", "tests/test_d.py"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300, env=env)
    assert "beside" not in alone.stdout and "1 failed, 1 passed" in alone.stdout
