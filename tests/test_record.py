"""A change that moves a number is seen: each generator's tiny run (4 steps, evaluated at step 4)
ends at the loss the committed record holds, within 1e-5 (relative), and draws samples whose mean
pixel the record holds within 0.5 of 255.

When a change is meant to move a number (a new method, a new default), say so in its commit and
write the record again: `python tests/test_record.py` (it runs the same tiny runs)."""
import json
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = os.path.join(HERE, "record.json")
SCRIPTS = ["maskgit.py", "jepa_maskgit.py", "givt.py", "mar.py", "dit.py", "ar.py"]


def reading(folder):
    """(the loss at the last evaluation, the mean pixel of its samples in 0..255)."""
    last = [json.loads(line) for line in open(os.path.join(folder, "metrics.jsonl"))][-1]
    return last["loss"], float(np.load(os.path.join(folder, "samples.npz"))["images"].mean())


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_tiny_run_repeats_the_record(script, tiny_run):
    loss, pixel = reading(tiny_run(script))
    expected = json.load(open(RECORD))[script]
    assert loss == pytest.approx(expected["loss"], rel=1e-5), (
        f"{script}: the loss moved; see this file's docstring")
    assert abs(pixel - expected["mean_pixel"]) <= 0.5, (
        f"{script}: the samples moved; see this file's docstring")


if __name__ == "__main__":                        # write the record again, from the same tiny runs
    import tempfile
    sys.path.insert(0, os.path.dirname(HERE))
    sys.path.insert(0, HERE)
    import scripts
    record = {}
    with tempfile.TemporaryDirectory() as folder:
        for script in SCRIPTS:
            out = os.path.join(folder, script)
            scripts.main(script, *scripts.ONCE, "--out", out)
            loss, pixel = reading(out)
            record[script] = dict(loss=loss, mean_pixel=round(pixel, 3))
    with open(RECORD, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps(record, indent=1))
