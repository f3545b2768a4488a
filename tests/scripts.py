"""Running the generator scripts from the tests: through their command line (a subprocess),
in this process through their main(argv) (what the command line calls, without the start-up
of a new Python and its torch import), or, for flag refusals, through their own argument
parsing in-process."""
import contextlib
import importlib
import io
import os
import subprocess
import sys

import pytest
import torch


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAST = ["--steps", "4", "--eval-every", "2", "--samples-per-comp", "2", "--batch-size", "8",
        "--device", "cpu", "--train-per-comp", "100"]
ONCE = [*FAST, "--eval-every", "4"]                     # FAST's 4 steps, evaluated once, at the end


def where(script):
    """A script by its file name, found where it lives: 'dit.py' at the top, 'ar.py' in studies/
    (or given with its folder, 'studies/ar.py')."""
    return script if os.path.exists(os.path.join(ROOT, script)) else os.path.join("studies", script)


def module_of(script):
    """The script's module, imported: 'dit.py' -> dit, 'ar.py' -> studies.ar."""
    return importlib.import_module(where(script)[:-3].replace("/", "."))


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(ROOT, where(script)), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def main(script, *args):
    """The script's main(argv) in this process, for runs whose exit code and signals are not under
    test; returns what it printed. Torch's global random state is put back afterwards, so that a
    run leaves nothing behind for the next test."""
    module = module_of(script)
    printed = io.StringIO()
    with torch.random.fork_rng(devices=[]), contextlib.redirect_stdout(printed):
        module.main([str(a) for a in args])
    return printed.getvalue()


def refused(module, argv, capsys):
    """The module's get_config(argv), which must refuse: (exit code, what it said)."""
    with pytest.raises(SystemExit) as exit:
        module.get_config(argv)
    code = exit.value.code
    return (code, capsys.readouterr().err) if isinstance(code, int) else (1, str(code))
