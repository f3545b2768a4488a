"""notebooks/hosted_gpu.ipynb: valid nbformat 4 with no outputs stored, its settings read from one
cell, its code found (its own checkout, an uploaded copy) or asked for by name, and executed top
to bottom on the CPU at a tiny budget, without jupyter: its code cells run in order in one Python
process, each shell line (`!...`) run as IPython would run it, with its `{NAME}` filled in, except
the clone and the install, which the test's checkout does not need."""
import json
import os
import re
import subprocess
import sys
import zipfile

import runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "notebooks", "hosted_gpu.ipynb")
TINY = {"BUDGET": '"tiny"', "MODELS": '"dit"', "AT_ONCE": "1"}          # and OUT, the test's own
SETTINGS = ("REPO_URL", "BUDGET", "MODELS", "AT_ONCE", "OUT")
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


def settings_cell(cells):
    [index] = {i for i, source in enumerate(cells) for name in SETTINGS
               if re.search(rf"^{name} = ", source, re.MULTILINE)}               # all in one cell
    return index


def set_in(source, values):
    """The settings cell with these names' values instead of its own."""
    for name, value in values.items():
        source, found = re.subn(rf"^{name} = [^#\n]*", f"{name} = {value}  ", source,
                                flags=re.MULTILINE)
        assert found == 1, name
    return source


def run_cells(sources, cwd):
    """The cells as one Python program, run in cwd: (exit code, stdout, stderr)."""
    program = "\n\n".join([SHELL, *map(as_python, sources)]) + "\n"
    environment = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", program], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=600, check=False)
    return done.returncode, done.stdout, done.stderr


def test_the_notebook_is_nbformat_4_with_no_outputs_and_short_lines():
    notebook = load()
    assert notebook["nbformat"] == 4 and notebook["nbformat_minor"] >= 4
    assert notebook["metadata"]["kernelspec"]["language"] == "python"
    kinds = [cell["cell_type"] for cell in notebook["cells"]]
    assert set(kinds) <= {"markdown", "code"} and 4 <= kinds.count("code") <= 8   # a handful
    ids = [cell["id"] for cell in notebook["cells"]]
    assert len(set(ids)) == len(ids)
    for cell in notebook["cells"]:
        assert isinstance(cell["source"], list) and isinstance(cell["metadata"], dict)
        assert all(len(line.rstrip("\n")) <= 100 for line in cell["source"])
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
    for source in code_cells(notebook):
        compile(as_python(source), "cell", "exec")


def test_the_settings_are_read_from_one_cell_and_the_check_is_what_runs():
    cells = code_cells(load())
    settings = cells[settings_cell(cells)]
    assert re.search(r'^REPO_URL = "" +# @param \{type:"string"\}$', settings, re.MULTILINE)
    shell = [line.strip() for source in cells for line in source.splitlines()
             if line.strip().startswith("!") and not line.strip()[1:].startswith(SKIPPED)]
    assert shell == ["!python tools/gpu_check.py {CHECK}"]              # the check, nothing else
    [check] = [source for source in cells if "CHECK = " in source]
    for name in ("BUDGET", "MODELS", "AT_ONCE", "OUT", "DEVICE"):
        assert "{" + name + "}" in check.split("\n")[0]


def test_without_a_copy_the_notebook_asks_for_the_address_or_an_upload(tmp_path):
    cells = code_cells(load())
    first = settings_cell(cells)
    code, _, said = run_cells(cells[first:first + 2], tmp_path)            # settings, then code
    assert code == 1 and "set REPO_URL in the settings cell" in said and "upload" in said, said
    with zipfile.ZipFile(tmp_path / "repository.zip", "w") as copy:     # GitHub's Download ZIP
        for name in ("generators-main/tools/gpu_check.py", "generators-main/requirements.txt"):
            copy.writestr(name, "")
    code, printed, said = run_cells(cells[first:first + 2], tmp_path)
    assert code == 0, said[-2000:]
    assert f"in {tmp_path / 'uploaded' / 'generators-main'} | torch" in printed


def test_the_notebook_runs_top_to_bottom_on_the_cpu_at_a_tiny_budget(tmp_path):
    cells = code_cells(load())
    out = tmp_path / "check"
    first = settings_cell(cells)
    cells[first] = set_in(cells[first], {**TINY, "OUT": repr(str(out))})
    code, printed, said = run_cells(cells, os.path.dirname(NOTEBOOK))
    assert code == 0, printed[-3000:] + said[-3000:]
    assert f"in {ROOT} | torch" in printed
    summary = json.loads((out / "gpu.json").read_text())
    assert summary["budget"] == "tiny" and summary["at_once"] == 1
    assert list(summary["speed"]) == ["dit"] and [r["run"] for r in summary["runs"]] == ["dit"]
    assert (out / "gpu.md").read_text() in printed                     # its tables, shown
    run = out / "runs" / "dit"
    config = json.loads((run / "config.json").read_text())
    assert (config["steps"], config["samples_per_comp"], config["device"]) == (2, 2, "cpu")
    last = runs.read_metrics(str(run))[-1]
    assert f"{run}, step 2: composed (%) seen {100 * last['seen']:.1f}" in printed
