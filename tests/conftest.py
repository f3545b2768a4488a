import os
import sys

# One thread per process, here and in every run a test starts (they inherit it): the models are
# small, and where two processes share the two cores (a run beside its subprocess, the suite's
# workers, a training run on the machine) a thread that waits on the other's costs 5-10x
# (measured on 2 shared cores: 100 MaskGIT steps in 7-8 s on one thread, 37-103 s on two).
os.environ["OMP_NUM_THREADS"] = "1"
import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # tests/scripts.py


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """script -> the folder of one finished run of it, trained in this process (scripts.ONCE: 4
    steps, evaluated once, at step 4), made once per session and shared by the tests and files
    that only read a run. Read it; copy it before changing anything in it."""
    import scripts
    made = {}

    def get(script):
        if script not in made:
            out = tmp_path_factory.mktemp(f"tiny-{script[:-3]}") / "run"
            scripts.main(script, *scripts.ONCE, "--out", out)
            made[script] = out
        return made[script]
    return get


# ------------------------------------------------------- the whole suite on both cores
# `python -m pytest -q tests` (or the folder itself) runs half of the test files here and the
# other half in a second pytest started beside this one, once collection is done: most tests keep
# one core busy, and the machine has two. Any narrower selection (a file, a test, -k) runs here
# alone, as does a run with TESTS_ONE_PROCESS=1. The halves are balanced by each file's seconds
# (measured in one process from a clean clone, a training beside it; an unlisted file counts 3).
SECONDS = {"test_learning.py": 120, "test_generators.py": 105, "test_course.py": 75,
           "test_reproduce.py": 60, "test_gpu_check.py": 50, "test_calibration.py": 45,
           "test_worlds.py": 27, "test_notebook.py": 23, "test_judge.py": 14,
           "test_devices.py": 13, "test_inside.py": 11, "test_objects.py": 11}
_BESIDE = {}


def halves(files):
    """The test files split in two lists of about equal seconds, the costliest placed first."""
    def cost(file):
        return SECONDS.get(os.path.basename(file), 3)
    parts, weights = ([], []), [0, 0]
    for file in sorted(files, key=cost, reverse=True):
        lighter = weights.index(min(weights))
        parts[lighter].append(file)
        weights[lighter] += cost(file)
    return parts


def whole_suite(config):
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.abspath(arg) for arg in config.args]
    return (not os.environ.get("TESTS_ONE_PROCESS") and not config.option.keyword
            and not config.option.markexpr and not config.option.collectonly
            and paths and all(path in (here, ROOT) for path in paths))


def pytest_collection_modifyitems(session, config, items):
    import subprocess
    import tempfile
    if not whole_suite(config):
        return
    files = sorted({str(item.path) for item in items})
    here, beside = halves(files)
    log = tempfile.TemporaryFile("w+")
    _BESIDE["process"] = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", *beside],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        env=dict(os.environ, TESTS_ONE_PROCESS="1"))
    _BESIDE["log"], _BESIDE["files"] = log, len(beside)
    config.hook.pytest_deselected(items=[i for i in items if str(i.path) in beside])
    items[:] = [item for item in items if str(item.path) in here]


def pytest_sessionfinish(session, exitstatus):
    """Wait for the half beside; the session fails if that half failed."""
    if "process" in _BESIDE:
        code = _BESIDE["process"].wait()
        _BESIDE["log"].seek(0)
        _BESIDE["output"] = _BESIDE.pop("log").read()
        if code != 0 and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if "output" in _BESIDE:
        lines = _BESIDE["output"].rstrip().splitlines()
        ok = _BESIDE["process"].returncode == 0
        terminalreporter.write_sep("=", f"the other half, {_BESIDE['files']} files, beside")
        terminalreporter.write_line("\n".join(lines[-1:] if ok else lines[-200:]))


def pytest_unconfigure(config):
    if _BESIDE.get("process") and _BESIDE["process"].poll() is None:      # interrupted
        _BESIDE["process"].kill()
