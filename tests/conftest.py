import os
import sys

# One thread per process, here, in each of pytest-xdist's workers (`-n auto`: a worker a core, a
# file a worker) and in every run a test starts (they inherit it): the models are small, and where
# two processes share the two cores (a run beside its subprocess, the suite's workers, a training
# run on the machine) a thread that waits on the other's costs 5-10x (measured on 2 shared cores:
# 100 MaskGIT steps in 7-8 s on one thread, 37-103 s on two).
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
