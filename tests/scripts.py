"""Running the generator scripts from the tests: through their command line (a subprocess)
or, for flag refusals, through their own argument parsing in-process."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAST = ["--steps", "4", "--eval-every", "2", "--samples-per-comp", "2", "--batch-size", "8",
        "--device", "cpu", "--train-per-comp", "100"]


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(ROOT, script), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def refused(module, argv, capsys):
    """The module's get_config(argv), which must refuse: (exit code, what it said)."""
    with pytest.raises(SystemExit) as exit:
        module.get_config(argv)
    code = exit.value.code
    return (code, capsys.readouterr().err) if isinstance(code, int) else (1, str(code))
