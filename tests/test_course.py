"""The course kit: every check passes on the repository and fails on the student copy of its
own assignment, in a few lines that name the function to write; student copies import, are
small, hold a task sheet and no answer; the commands refuse bad input."""
import ast
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COURSE = os.path.join(ROOT, "course")
with open(os.path.join(COURSE, "assignments.toml"), "rb") as f:
    ASSIGNMENTS = tomllib.load(f)
sys.path.insert(0, COURSE)
from mutations import MUTATIONS  # noqa: E402   tests/mutations.py: the course's broken answers are rows of it


def python(*args, cwd=ROOT):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def summary(output):
    """(passed, failed) from pytest's last line."""
    last = output.strip().splitlines()[-1]

    def count(word):
        found = re.search(rf"(\d+) {word}", last)
        return int(found.group(1)) if found else 0

    return count("passed"), count("failed")


def test_every_check_passes_on_the_repository():
    result = python("-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(COURSE, "checks"))
    passed, failed = summary(result.stdout)
    assert result.returncode == 0 and failed == 0 and passed >= 3 * len(ASSIGNMENTS), (
        result.stdout[-3000:])


def test_every_assignment_has_a_marked_check_file_and_real_functions():
    for name, assignment in ASSIGNMENTS.items():
        source = open(os.path.join(ROOT, assignment["checks"])).read()
        assert f"pytestmark = pytest.mark.{name.lower()}" in source, name
        for key in ("title", "functions", "run", "hours", "goal", "hint", "check_seconds"):
            assert key in assignment, f"{name}: no {key}"
        assert "minutes" in assignment["run"], f"{name}: no run.minutes"


def student_copy(name, folder):
    """make_student.py, then the copy's own check.py, as a teacher and a student run them."""
    made = python(os.path.join(COURSE, "make_student.py"), name, "--out", str(folder))
    checked = (python(str(folder / "course" / "check.py"), name, cwd=folder)
               if made.returncode == 0 else None)
    return made, checked


@pytest.fixture(scope="module")
def student_copies(tmp_path_factory):
    """Every assignment's student copy, made and checked two at a time (the CI machine has 2
    cores)."""
    root = tmp_path_factory.mktemp("students")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(student_copy, name, root / name) for name in ASSIGNMENTS}
    return {name: (root / name, *future.result()) for name, future in futures.items()}


@pytest.mark.parametrize("name", list(ASSIGNMENTS))
def test_the_checks_fail_on_the_student_copy(name, student_copies):
    """In a few lines (not pytest's tracebacks) that name each function still to write."""
    out, made, result = student_copies[name]
    assert made.returncode == 0, made.stderr[-2000:]           # make_student checks that it imports
    for spec in ASSIGNMENTS[name]["functions"]:
        path, qualname = spec.split("::")
        assert f"{name}: write {path}::{qualname}" in (out / path).read_text(), spec
    assert not (out / "course" / "ANSWERS.md").exists()
    assert not (out / "tests" / "mutations.py").exists()
    passed, failed = summary(result.stdout)
    assert result.returncode != 0 and passed == 0 and failed >= 3, result.stdout[-3000:]
    output = result.stdout + result.stderr
    assert len(output.splitlines()) <= 30, output
    named = re.findall(r"not written yet: (\S+)", output)         # every check, and by the function
    assert len(named) == failed and set(named) <= set(ASSIGNMENTS[name]["functions"]), output
    assert ASSIGNMENTS[name]["functions"][0] in named, output
    assert ("course/README.md" not in output and "Traceback" not in output
            and "TASK.md" in output), output


@pytest.mark.parametrize("name", list(ASSIGNMENTS))
def test_the_task_sheet_says_what_to_write_where(name, student_copies):
    out = student_copies[name][0]
    sheet, assignment = (out / "TASK.md").read_text(), ASSIGNMENTS[name]
    for text in (assignment["title"], assignment["goal"], assignment["hint"].split()[0],
                 f"python course/check.py {name}", f"python course/check.py {name} --run"):
        assert text in sheet, text
    blanked = re.findall(r"`(\S+\.py)::(\S+)` \(line (\d+)\)", sheet)
    written = {f"{path}::{qualname}" for path, qualname, _ in blanked}
    assert written >= set(assignment["functions"]), sheet
    for path, qualname, line in blanked:                             # each one at the line it names
        assert re.match(rf"\s*def {qualname.split('.')[-1]}\(",
                        (out / path).read_text().splitlines()[int(line) - 1])
        assert f"{name}: write {path}::{qualname} (see TASK.md)" in (out / path).read_text()
    tree = ast.parse(open(os.path.join(ROOT, assignment["checks"])).read())
    checks = [node.name for node in tree.body
              if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]
    assert len(re.findall(r"^- .* \(calls `", sheet, re.M)) == len(checks), sheet


@pytest.mark.parametrize("name", list(ASSIGNMENTS))
def test_the_copy_is_small_and_holds_no_answer(name, student_copies):
    out = student_copies[name][0]
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    assert size < 2_000_000, f"{name}: the copy holds {size / 1e6:.1f} MB"
    for folder in ("results", "tools", "runs", ".git"):
        assert not (out / folder).exists(), folder
    assert not (out / "tests" / "gallery.npz").exists()
    assert not (out / "course" / "README.md").exists()
    for path, right, _, _, assignment in MUTATIONS:                     # the correct lines are gone
        assert assignment != name or right not in (out / path).read_text(), (path, right)
    if name == "A3":                                         # the formulas in the notes above noisy
        for answer in ("(1 - t) x_0 + t eps", "(x_t - x0_hat) / t"):
            handed = (out / "dit.py").read_text() + (out / "TASK.md").read_text()
            assert answer not in handed, answer


def test_identical_copies_are_blanked_in_the_other_generators(student_copies):
    out = student_copies["A4"][0]
    for path in ("dit.py", "maskgit.py", "givt.py", "mar.py", "studies/ar.py"):
        text = (out / path).read_text()
        assert f"A4: write {path}::Block.forward" in text, path
        assert f"A4: write {path}::modulate" in text, path
    assert "x * (1 + scale) + shift" not in (out / "maskgit.py").read_text()
    assert "A2: write studies/ar.py::log_density" in (student_copies["A2"][0] / "studies" / "ar.py"
                                                       ).read_text()
    ladder = python("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_ladder.py",
                    cwd=student_copies["A3"][0])
    assert ladder.returncode == 0, ladder.stdout[-2000:]     # the copy holds every file it compares


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


def test_the_training_run_is_judged_on_the_seen_compositions(tmp_path, student_copies):
    """check.py --run's plumbing on a 2-step run in A3's student copy with its answers put back:
    the copy holds all a run needs (the real runs take minutes: see course/README.md)."""
    sys.path.insert(0, COURSE)
    import check
    tiny = {"command": "dit.py --steps 2 --eval-every 2 --samples-per-comp 2 --batch-size 8 "
                       "--device cpu "
                       "--train-per-comp 100", "reading": "probe_acc", "pass_seen": 0.0}
    solved = tmp_path / "A3"
    shutil.copytree(student_copies["A3"][0], solved)
    shutil.copy(os.path.join(ROOT, "dit.py"), solved / "dit.py")
    last = check.training_run("A3", {"run": tiny}, str(solved))
    assert last is not None and 0 <= check.seen_of(last, "probe_acc") <= 1
    assert len(list((solved / "runs").glob("course-A3-*/metrics.jsonl"))) == 1
    assert check.the_question(last)[0].startswith("111 (level-2, never seen): composed ")


def test_the_run_ends_on_111_beside_the_seen_compositions():
    """check.py --run's last lines: `111` composed and on the probe, beside the seen mean of each;
    objects.py's run: 4 to 10 objects asked beside 1 to 3, exact and found."""
    sys.path.insert(0, COURSE)
    import check
    acc = {"000": 1.0, "001": 0.5, "010": 1.0, "100": 0.5, "011": 0.0, "101": 0.0, "110": 0.0,
           "111": 0.25}
    probe = {code: 1.0 - value / 2 for code, value in acc.items()}
    assert check.the_question({"acc": acc, "probe_acc": probe}) == [
        "111 (level-2, never seen): composed 25.0%, probe 87.5%",
        "seen (000 001 010 100):    composed 75.0%, probe 62.5%"]
    assert check.the_question({"trained": 1.0, "found_trained": 1.0, "beyond": 0.4,
                               "found_beyond": 0.9}) == [
        "4 to 10 objects asked (never trained): exact 40.0%, found 90.0%",
        "1 to 3 objects asked (as trained):     exact 100.0%, found 100.0%"]


# Right answers written another way than the repository's: (assignment, file, the repository's
# text, the variant). The checks are about behaviour, so each must pass them.
VARIANTS = [
    ("A4", "dit.py",                                                 # one norm, its own eps
     "        self.norm1 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)\n"
     "        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)\n"
     "        self.norm2 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)\n",
     "        self.norm = nn.LayerNorm(width, elementwise_affine=False)\n"
     "        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)\n"),
    ("A4", "dit.py",                                                 # the six in another order
     "        shift1, scale1, gate1, shift2, scale2, gate2 = modulation.chunk(6, -1)\n"
     "        h = modulate(self.norm1(x), shift1, scale1)\n",
     "        gate1, gate2, shift1, shift2, scale1, scale2 = modulation.chunk(6, -1)\n"
     "        h = modulate(self.norm(x), shift1, scale1)\n"),
    ("A4", "dit.py", "h = modulate(self.norm2(x), shift2, scale2)",
     "h = self.norm(x) * (1 + scale2) + shift2"),
    ("A6", "jepa_maskgit.py", "    hidden = random_mask(*ids.shape, rng, schedule)\n",
     "    hidden = maskgit.random_mask(*ids.shape, rng, schedule)\n"),       # by its module's name
    ("A7", "data.py",
     "dropped = torch.rand(len(latents), 3, generator=rng, device=device) < drop_prob",
     "dropped = torch.bernoulli(torch.full((len(latents), 3), drop_prob, device=device), "
     "generator=rng).bool()"),
    # the gates alone start at 0 (the paper's alpha); gate1 and gate2 are the six's first two here
    ("A4", "dit.py", "        nn.init.zeros_(self.modulation.weight)",
     "        with torch.no_grad():\n"
     "            self.modulation.weight.view(6, width, width)[:2] = 0"),
    ("A6", "jepa_maskgit.py", "    return start + (1 - start) * step / steps\n",
     "    return 1 - (1 - start) * (1 - step / steps)\n"),
    # each out_proj saved once, put back in order
    ("A9", "studies/inside.py",
     "            saved.append((out, out.weight.detach().clone(), out.bias.detach().clone()))\n",
     "            if not any(out is other for other, _, _ in saved):\n"
     "                saved.append((out, out.weight.detach().clone(), "
     "out.bias.detach().clone()))\n"),
    ("A9", "studies/inside.py", "for out, weight, bias in reversed(saved):",
     "for out, weight, bias in saved:"),
    ("A9", "studies/inside.py", "        return (((test_x - mean) / std) @ w + b > 0).long()",
     "        return (torch.sigmoid(((test_x - mean) / std) @ w + b) > 0.5).long()"),  # p > 1/2
    ("A10", "studies/objects.py", "    cell = (points / PATCH).floor().clamp(0, SIDE - 1)",
     '    cell = torch.div(points, PATCH, rounding_mode="floor").clamp(0, SIDE - 1)'),
    ("A1", "maskgit.py",                              # hide the keys up to the count-th smallest
     "    rank = keys.argsort(1).argsort(1)\n    return rank < count[:, None]",
     "    return keys <= keys.sort(1).values.gather(1, count.long()[:, None] - 1)"),
    ("A2", "givt.py", "    return nll.mean() / x.shape[-1]\n",
     "    return nll.sum() / (hidden.sum() * x.shape[-1])\n"),
    ("A5", "mar.py",                                  # the posterior mean from eps_hat directly
     "        x0_hat = (x - (1 - a_t).sqrt() * eps_hat) / a_t.sqrt()\n"
     "        beta = 1 - a_t / a_s\n"
     "        # posterior q(x_s | x_t, x0_hat): mean and variance of the DDPM step\n"
     "        mean = (a_s.sqrt() * beta * x0_hat + (a_t / a_s).sqrt() * (1 - a_s) * x) "
     "/ (1 - a_t)\n",
     "        beta = 1 - a_t / a_s                                # Ho et al.'s equation 11\n"
     "        mean = (x - beta / (1 - a_t).sqrt() * eps_hat) / (1 - beta).sqrt()\n"),
]


def test_the_checks_accept_right_answers_written_another_way(tmp_path):
    """A copy of the repository with VARIANTS written in passes its assignments' checks (one
    pytest for them all: a few seconds)."""
    from mutations import copy_of_repository
    copy_of_repository(str(tmp_path))
    for _, path, right, variant in VARIANTS:
        source = (tmp_path / path).read_text()
        assert source.count(right) == 1, (path, right)
        (tmp_path / path).write_text(source.replace(right, variant))
    checks = sorted({os.path.join(str(tmp_path), ASSIGNMENTS[name]["checks"])
                     for name, *_ in VARIANTS})
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             *checks], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, COURSE_DIR=str(tmp_path),
                                     PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"))
    assert result.returncode == 0, result.stdout[-3000:]


# Wrong answers the checks must reject, besides the rows of tests/mutations.py with an assignment
# (which the project's own tests must catch as well): (assignment, file, [(the repository's text,
# the wrong one)], what the report of `python course/check.py` must say and what it must not (None:
# no such rule), regular expressions in which a space matches any run of spaces and line breaks
# (the report wraps its lines)). The first six were accepted by the checks once; the others pin a
# message: the function it points at, what it names, what it must not print.
WRONG = [
    ("A4", "dit.py",                                  # one shift, scale and gate for both branches
     [("self.modulation = nn.Linear(width, 6 * width)",
       "self.modulation = nn.Linear(width, 3 * width)"),
      ("        shift1, scale1, gate1, shift2, scale2, gate2 = modulation.chunk(6, -1)\n",
       "        shift1, scale1, gate1 = modulation.chunk(3, -1)\n"
       "        shift2, scale2, gate2 = shift1, scale1, gate1\n")],
     "FAILED each branch has its own shift scale and gate", None),
    ("A4", "dit.py",                        # the identity at first through the branches' outputs
     [("        nn.init.zeros_(self.modulation.weight)",
       "        nn.init.zeros_(self.attention.out_proj.weight)\n"
       "        nn.init.zeros_(self.mlp[2].weight)\n"
       "        nn.init.zeros_(self.mlp[2].bias)"),
      ("        nn.init.zeros_(self.modulation.bias)\n", "")],
     "FAILED a new block is the identity", None),
    ("A6", "jepa_maskgit.py",                 # a curve through the line's ends and its midpoint
     [("    return start + (1 - start) * step / steps\n",
       "    x = step / steps\n"
       "    return start + (1 - start) * (x + 2 * x * (x - 0.5) * (x - 1))\n")],
     "FAILED target_momentum rises linearly", None),
    # put back in the order they were saved
    ("A9", "studies/inside.py",
     [("for out, weight, bias in reversed(saved):", "for out, weight, bias in saved:")],
     "FAILED leaving the ablation puts everything back .* reverse order", None),
    # a logit against 1/2
    ("A9", "studies/inside.py", [("@ w + b > 0).long()", "@ w + b > 0.5).long()")],
     "FAILED the probe reads a linear code .* logit is above 0", None),
    ("A10", "studies/objects.py", [("(points / PATCH).floor()", "(points / PATCH).round()")],
     r"FAILED neighbours are .* \(11.0, 2.5\) lies in patch \(2, 0\)", None),
    ("A3", "dit.py",                                       # the weight the hint asks to work out
     [("    weight = 1 / t.clamp(min=0.05) ** 2\n", "    weight = 1 / t.clamp(min=0.05)\n")],
     "FAILED flow_loss draws t", r"\^ ?2|\*\* ?2|1 ?/ ?t\b|max\(t|/ ?t\^"),
    ("A1", "maskgit.py",                        # a wrong schedule fails mask_ratio's check alone
     [("return torch.cos(math.pi / 2 * r)", "return torch.cos(math.pi / 2 * r) ** 2")],
     r"look at maskgit.py::mask_ratio\n.*\n1 failed", "look at maskgit.py::(?!mask_ratio)"),
    ("A5", "mar.py",                                         # and alpha_bar's (not divided by f(0))
     [("return (f(t) / f(torch.zeros_like(t))).clamp(min=1e-4)", "return f(t).clamp(min=1e-4)")],
     r"look at mar.py::alpha_bar\n.*\n1 failed", "look at mar.py::(?!alpha_bar)"),
    ("A1", "maskgit.py",                            # each position hidden on its own, not a count
     [("    rank = keys.argsort(1).argsort(1)\n    return rank < count[:, None]",
       "    return keys < mask_ratio(r, schedule)[:, None]")],
     "FAILED random_mask .* not each position on its own", "rounded"),
    ("A5", "mar.py",                                   # x0_hat not divided by sqrt(alpha_bar(t))
     [("x0_hat = (x - (1 - a_t).sqrt() * eps_hat) / a_t.sqrt()",
       "x0_hat = x - (1 - a_t).sqrt() * eps_hat")],
     r"FAILED denoise lands .* it returns x_0 times 0\.99\d\d: is each step's x0_hat", None),
    # the pixel read at (row x, column y)
    ("A10", "studies/objects.py",
     [("image[torch.arange(len(x_0), device=device), row, column]",
       "image[torch.arange(len(x_0), device=device), column, row]")],
     r"FAILED pixel_locality .* second object: x = \d+\.\d, y = \d+\.\d px, the pixel in row \d+, "
     "column \\d+\\); it reads 1 where x = y: are x and y swapped", None),
    # the distance measured from (y, x)
    ("A10", "studies/objects.py",
     [("near_pixels(points[:, 0], radius)", "near_pixels(points[:, 0].flip(-1), radius)")],
     r"FAILED locality is one .* first object: x = .* are x and y swapped", None),
    ("A7", "data.py", [("values[:, 4] = sizes[bits[:, 2]]", "values[:, 4] = sizes[bits[:, 1]]")],
     r"wrong for \['001', '010', '101', '110'\]", r"np\.str_"),
    ("A2", "givt.py",                                     # a mean per image, then over the images
     [("    return nll.mean() / x.shape[-1]\n",
       "    per_image = torch.zeros(len(x)).index_add(0, at[0], nll) / hidden.sum(1)\n"
       "    return per_image.mean() / x.shape[-1]\n")],
     "a mean per image, then over the images", None),
]


def test_the_checks_reject_wrong_answers(tmp_path):
    """Each row of WRONG written into a copy of the repository fails its assignment's checks, in a
    report that says what the row expects (one process, a fork a row: about 1 s a row)."""
    from mutations import copy_of_repository
    copy_of_repository(str(tmp_path / "copy"))
    (tmp_path / "logs").mkdir()
    result = subprocess.run([sys.executable, os.path.abspath(__file__), str(tmp_path / "copy"),
                             str(tmp_path / "logs")], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    status = dict(line.split() for line in result.stdout.splitlines())

    def loose(pattern):
        return re.compile(pattern.replace(" ", r"\s+"), re.DOTALL)

    for i, (name, path, _, says, never) in enumerate(WRONG):
        report = (tmp_path / "logs" / f"{i}.log").read_text()
        assert status[str(i)] == "1", (name, path, report[-2000:])          # 1: checks failed
        assert loose(says).search(report), (name, path, says, report[-2000:])
        assert never is None or not loose(never).search(report), (name, path, never, report)


def reject(folder, logs):
    """python tests/test_course.py FOLDER LOGS: each row of WRONG written in turn into the copy of
    the repository in FOLDER, its assignment's checks run there as check.py runs them, in a fork of
    this process (torch is imported once), the report into LOGS/N.log; prints 'N exit-status'."""
    from mutations import warm
    warm()
    ours = {ROOT, COURSE, os.path.dirname(os.path.abspath(__file__))}  # the copy's files, not ours
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) not in ours]
    for i, (name, path, changes, _, _) in enumerate(WRONG):
        file = os.path.join(folder, path)
        with open(file) as f:
            source = f.read()
        wrong = source
        for right, text in changes:
            assert wrong.count(right) == 1, (path, right)
            wrong = wrong.replace(right, text)
        with open(file, "w") as f:
            f.write(wrong)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:                                              # the child: the checks, then exit
            code = 3
            try:
                out = os.open(os.path.join(logs, f"{i}.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(out, 1)
                os.dup2(out, 2)
                os.chdir(folder)
                os.environ.update(COURSE_DIR=folder, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
                code = pytest.main(["-q", "-p", "no:cacheprovider", "--brief", "--tb=no", "-rN",
                                    "--disable-warnings", "-m", name.lower(),
                                    os.path.join(folder, ASSIGNMENTS[name]["checks"])])
            finally:
                sys.stdout.flush()
                os._exit(int(code))
        _, status = os.waitpid(pid, 0)
        with open(file, "w") as f:
            f.write(source)                                             # the copy is right again
        print(i, os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    reject(*sys.argv[1:])
