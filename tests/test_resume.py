"""--resume off the CPU, and a damaged checkpoint.

On the simulated device of tests/elsewhere.py (a GPU's rules on a CPU), each generator trains
three steps, evaluated and checkpointed at steps 2 and 3; a copy of its run folder as it stood at
step 2 is resumed there, and must end where the unbroken run ended, bit for bit: every tensor of
the checkpoint (networks, optimizer, every random state) and the metrics of step 3. On the CPU a
run's random draws may come from one generator; off it they come from several (the device's, and
objects.py's host generator that places the discs), and each must be saved and restored.

A ckpt.pt cut short (a disk that filled, a copy that stopped) ends --resume in one line that
names the file and says to start a new --out, not in torch's traceback."""
import json
import os
import shutil

import elsewhere
import numpy as np
import pytest
import scripts
import torch

import runs

# loading a checkpoint into the simulated device's parameters copies (torch warns it would not)
pytestmark = pytest.mark.filterwarnings("ignore:for .*copying from a non-meta parameter")
TINY = ["--samples-per-comp", "1", "--batch-size", "4", "--width", "32", "--depth", "1",
        "--heads", "2", "--steps", "3", "--eval-every", "2"]            # evaluated at 2 and at 3
OWN = {"maskgit.py": ["--sample-steps", "2"], "givt.py": ["--sample-steps", "2"],
       "jepa_maskgit.py": ["--sample-steps", "2", "--jepa-layers", "0"],
       "mar.py": ["--sample-steps", "2", "--diffusion-steps", "2"],
       "dit.py": ["--sample-steps", "2"], "ar.py": [], "objects.py": ["--sample-steps", "2"]}


def config(script, out, *flags, resume=False):
    """The script's config for TINY on ELSEWHERE, its run folder out."""
    module = scripts.module_of(script)
    shapes2d = ["--train-per-comp", "10"] if script != "objects.py" else []
    _, args = module.parse([*TINY, *OWN[script], *shapes2d, *flags, "--out", str(out),
                            *(["--resume"] if resume else [])])
    settings = dict(vars(args), model=module.NAME, device=str(elsewhere.ELSEWHERE))
    runs.start_clock(settings)
    return module, settings


def same(a, b, where=""):
    """Where two checkpoint states differ (tensors bit for bit, the rest by ==): a list of keys."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a)} against {sorted(b)}"]
        return [d for key in a for d in same(a[key], b[key], f"{where}/{key}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same(x, y, f"{where}/{i}")]
    if torch.is_tensor(a) or torch.is_tensor(b):
        equal = torch.is_tensor(a) and torch.is_tensor(b) and a.dtype == b.dtype \
            and torch.equal(a, b)
        return [] if equal else [where]
    return [] if a == b else [where]


def resumes_elsewhere(script, tmp_path, *flags):
    """Train 3 steps on ELSEWHERE; resume the run as it stood at step 2, there; compare. The
    evaluations draw and judge as always, and draw no pictures (they cost more than the runs)."""
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    class Checkpoints(runs.Checkpoints):
        def save(self, step):                     # the run folder as a stop after step 2 left it
            super().save(step)
            if step == 2:
                shutil.copytree(self.config["out"], stopped)
    module, settings = config(script, straight, *flags)
    os.makedirs(straight)
    with pytest.MonkeyPatch.context() as patch, torch.random.fork_rng(devices=[]):
        for picture in ("save_samples_png", "save_curves_png"):
            patch.setattr(runs, picture, lambda *args, **kwargs: None)
        if script == "objects.py":
            patch.setattr(module, "save_grid", lambda *args, **kwargs: None)
        with elsewhere.elsewhere():
            patch.setattr(runs, "Checkpoints", Checkpoints)
            module.train(settings)
        patch.undo()
        for picture in ("save_samples_png", "save_curves_png"):
            patch.setattr(runs, picture, lambda *args, **kwargs: None)
        if script == "objects.py":
            patch.setattr(module, "save_grid", lambda *args, **kwargs: None)
        _, settings = config(script, stopped, *flags, resume=True)
        with elsewhere.elsewhere():
            module.train(settings)
    whole, resumed = (torch.load(folder / "ckpt.pt", weights_only=True)
                      for folder in (straight, stopped))
    assert whole["step"] == resumed["step"] == 3, script
    whole.pop("config"), resumed.pop("config")                # the folder and --resume differ
    differ = same(whole, resumed)
    assert not differ, f"{script}: resumed on another device, the run ends elsewhere: {differ[:6]}"
    lines = [runs.read_metrics(folder) for folder in (straight, stopped)]
    for line in lines[0] + lines[1]:
        line.pop("seconds")
    assert [m["step"] for m in lines[1]] == [2, 3] and lines[0] == lines[1], script


def test_maskgit_resumes_bit_for_bit_on_another_device(tmp_path):
    resumes_elsewhere("maskgit.py", tmp_path)


def test_jepa_maskgit_resumes_bit_for_bit_on_another_device(tmp_path):
    resumes_elsewhere("jepa_maskgit.py", tmp_path)


def test_givt_resumes_bit_for_bit_on_another_device(tmp_path):
    resumes_elsewhere("givt.py", tmp_path)


def test_mar_resumes_bit_for_bit_on_another_device(tmp_path):
    resumes_elsewhere("mar.py", tmp_path)


def test_dit_resumes_bit_for_bit_on_another_device(tmp_path):
    """--data fresh: each batch's images are rendered from a seed the device's generator draws."""
    resumes_elsewhere("dit.py", tmp_path, "--data", "fresh", "--cond", "dropout")


def test_ar_resumes_bit_for_bit_on_another_device(tmp_path):
    resumes_elsewhere("ar.py", tmp_path, "--head", "gmm")


def test_objects_resumes_bit_for_bit_on_another_device(tmp_path):
    """Off the CPU the discs are placed by a host generator of their own: it is restored too."""
    resumes_elsewhere("objects.py", tmp_path, "--cond", "one")


# ------------------------------------------------------------------------ a damaged checkpoint
@pytest.mark.parametrize("kept", [0.5, 0.0])                     # cut in the middle; left empty
def test_resume_of_a_truncated_checkpoint_says_so_in_one_line(kept, tmp_path, tiny_run, capsys):
    import dit
    out = tmp_path / "run"
    shutil.copytree(tiny_run("dit.py"), out)                # the session's tiny run, copied
    checkpoint = out / "ckpt.pt"
    whole = checkpoint.read_bytes()
    checkpoint.write_bytes(whole[:int(kept * len(whole))])
    before = {name: (out / name).read_bytes() for name in ("config.json", "metrics.jsonl")}
    code, said = scripts.refused(dit, [*scripts.ONCE, "--out", str(out), "--resume"], capsys)
    assert code == 1 and said == (f"error: {checkpoint} is damaged and cannot be read "
                                  f"({'RuntimeError' if kept else 'EOFError'}); it cannot be "
                                  "resumed: start a new --out"), said
    assert before == {name: (out / name).read_bytes() for name in before}     # nothing written
    with pytest.raises(SystemExit, match="damaged .* start a new --out"):
        runs.read_checkpoint(str(checkpoint))


# ------------------------------------------------------------------------ the clock across a resume
def test_resume_goes_on_from_the_last_kept_evaluations_seconds(tmp_path, monkeypatch):
    """metrics.jsonl's seconds are the run's wall time, a resumed run's earlier time included: on a
    clock set by hand, a run stopped after its checkpoint at step 4 (evaluated at 2, 4 and 6, the
    last with no checkpoint) goes on from step 4's seconds, not from 0 nor from step 6's, however
    long the resume itself took; its next evaluation records them plus the time since. A run not
    resumed starts at 0."""
    now = [1000.0]
    monkeypatch.setattr(runs, "time", type("Clock", (), {"time": staticmethod(lambda: now[0])}))
    out = tmp_path / "run"
    settings = {"out": str(out), "steps": 8, "eval_every": 2, "resume": False}
    runs.Checkpoints(settings, rng=torch.Generator().manual_seed(0)).save(4)
    with open(out / "metrics.jsonl", "w") as f:
        for step, seconds in ((2, 10.0), (4, 30.5), (6, 47.0)):
            f.write(json.dumps({"step": step, "seconds": seconds}) + "\n")
    resumed = dict(settings, resume=True)
    runs.start_clock(resumed)                                    # as runs.run starts it, at 1000
    now[0] = 1100.0                                              # reading the checkpoint took 100 s
    assert runs.Checkpoints(resumed, rng=torch.Generator()).resume() == 4
    assert [m["step"] for m in runs.read_metrics(str(out))] == [2, 4]
    now[0] = 1107.0
    assert runs.elapsed(resumed) == 37.5
    recorded = {}

    def record(out, step, loss, images, bits, title, seconds=0.0, *world):
        recorded.update(seconds=seconds)
        return dict(seen=0, level1=0, level2=0)
    monkeypatch.setattr(runs, "record", record)
    resumed.update(samples_per_comp=1, seed=0, cond="continuous", model="dit")
    runs.draw_and_read(lambda model, tokenizer, config, values, present, rng:
                       np.zeros((len(values), 32, 32, 3)), torch.nn.Linear(1, 1), None, resumed,
                       6, 0.0)
    assert recorded["seconds"] == 37.5                           # what the evaluation writes
    fresh = dict(settings, out=str(tmp_path / "fresh"))
    runs.start_clock(fresh)
    assert runs.Checkpoints(fresh).resume() == 0
    now[0] = 1111.0
    assert runs.elapsed(fresh) == 4.0
