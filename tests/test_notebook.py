"""notebooks/hosted_gpu.ipynb: valid nbformat 4 with no outputs stored, its budget read from one
cell, and executed top to bottom on the CPU at a tiny budget, without jupyter: its code cells run
in order in one Python process, each shell line (`!...`) run as IPython would run it, with its
`{NAME}` filled in, except the clone and the install, which the test's checkout does not need."""
import json
import os
import re
import subprocess
import sys

import runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "notebooks", "hosted_gpu.ipynb")
TINY = {"STEPS": "2", "EVAL_EVERY": "2", "SAMPLES_PER_COMP": "2", "TRAIN_PER_COMP": "8",
        "BATCH_SIZE": "4", "DEVICE": '"cpu"'}
SKIPPED = ("git clone", "pip install")     # the test runs inside a checkout that has its packages
SHELL = '''
def _shell(command):
    """A notebook's `!command` line: {NAME} filled in from the notebook's names, as IPython does."""
    import shlex, subprocess, sys
    words = shlex.split(command.format(**globals()))
    words[0] = sys.executable if words[0] == "python" else words[0]
    subprocess.run(words, check=True)
'''


def load():
    with open(NOTEBOOK) as f:
        return json.load(f)


def code_cells(notebook):
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def as_python(source):
    """A cell's text as plain Python: each `!command` line a call of _shell, or `pass`."""
    out = []
    for line in source.splitlines():
        shell = re.match(r"(\s*)!(.*)", line)
        if not shell:
            out.append(line)
        elif shell[2].strip().startswith(SKIPPED):
            out.append(f"{shell[1]}pass")
        else:
            out.append(f"{shell[1]}_shell({shell[2]!r})")
    return "\n".join(out)


def test_the_notebook_is_nbformat_4_with_no_outputs_and_short_lines():
    notebook = load()
    assert notebook["nbformat"] == 4 and notebook["nbformat_minor"] >= 4
    assert notebook["metadata"]["kernelspec"]["language"] == "python"
    kinds = [cell["cell_type"] for cell in notebook["cells"]]
    assert set(kinds) <= {"markdown", "code"} and 5 <= kinds.count("code") <= 8   # a handful
    ids = [cell["id"] for cell in notebook["cells"]]
    assert len(set(ids)) == len(ids)
    for cell in notebook["cells"]:
        assert isinstance(cell["source"], list) and isinstance(cell["metadata"], dict)
        assert all(len(line.rstrip("\n")) <= 100 for line in cell["source"])
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
    for source in code_cells(notebook):
        compile(as_python(source), "cell", "exec")


def test_the_budget_is_read_from_one_cell():
    cells = code_cells(load())
    setting = [i for i, source in enumerate(cells) for name in TINY
               if re.search(rf"^{name} = ", source, re.MULTILINE)]
    assert len(setting) == len(TINY) and len(set(setting)) == 1      # all set, in one cell
    budget = cells[setting[0]]
    for source in cells:                       # every run's flags come from that cell's BUDGET
        for line in source.splitlines():
            if re.match(r"\s*!python \w+\.py", line):
                assert "{BUDGET}" in line and "--steps" not in line
    for name in ("STEPS", "EVAL_EVERY", "SAMPLES_PER_COMP", "TRAIN_PER_COMP", "BATCH_SIZE"):
        assert "{" + name + "}" in budget


def test_the_notebook_runs_top_to_bottom_on_the_cpu_at_a_tiny_budget(tmp_path):
    cells = code_cells(load())
    where = str(tmp_path / "runs")
    program = [SHELL]
    for source in cells:
        if re.search(r"^STEPS = ", source, re.MULTILINE):      # the budget cell, made tiny
            for name, value in {**TINY, "RUNS": repr(where)}.items():
                source, found = re.subn(rf"^{name} = [^#\n]*", f"{name} = {value}  ", source,
                                        flags=re.MULTILINE)
                assert found == 1, name
        program.append(as_python(source))
    script = tmp_path / "notebook.py"
    script.write_text("\n\n".join(program) + "\n")
    environment = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(script)], cwd=os.path.dirname(NOTEBOOK),
                          env=environment, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in ("dit", "maskgit"):
        run = tmp_path / "runs" / name
        config = json.loads((run / "config.json").read_text())
        assert (config["steps"], config["samples_per_comp"], config["device"]) == (2, 2, "cpu")
        assert (run / "samples.png").exists() and (run / "curves.png").exists()
        last = runs.read_metrics(str(run))[-1]
        assert f"{run}, step 2: composed (%) seen {100 * last['seen']:.1f}" in done.stdout
    assert f"in {ROOT} | torch" in done.stdout
