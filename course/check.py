"""Run one assignment's checks, and optionally its short training run.

    python course/check.py A3                  # the checks
    python course/check.py A3 --run            # then a short training run, judged by judge.py
    python course/check.py A3 --full           # pytest's full report of each failed check
    python course/check.py A3 --dir ../a3-student

The checks import the code in --dir (default: the repository this file sits in). A failed
check is reported in a few lines: what it checks, what it expected and got, and which
function to look at. The run trains the assignment's model (a real training run, far longer
than the checks) and passes when its samples of the seen compositions (A10: of 1 to 3 objects
asked) are read right often enough (READINGS). It ends on the question the repository asks:
the model's `111` (never seen), composed and on the probe, beside its seen compositions (A10:
4 to 10 objects asked, never trained, beside 1 to 3). Python 3.11 or newer.
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import time

try:
    import tomllib
except ModuleNotFoundError:
    sys.exit("the course kit needs Python 3.11 or newer (it reads course/assignments.toml with "
             f"tomllib); this is Python {sys.version.split()[0]}")

COURSE = os.path.dirname(os.path.abspath(__file__))
SEEN = ("000", "001", "010", "100")
# What a run's reading reads, and what "right" means there: the --run verdict and the task sheet
SEEN_SAMPLES = "of the four seen compositions"
READINGS = {"acc": (SEEN_SAMPLES,
                    "composed: one legible object, with the right shape, colour and size"),
            "probe_acc": (SEEN_SAMPLES, "the linear probe names the right shape, colour and size"),
            "trained": ("asked for 1 to 3 objects, as in training",
                        "exactly the asked discs, each at its location")}
TASK = "TASK.md"                      # the task sheet make_student.py writes into a student copy


def load_assignments():
    with open(os.path.join(COURSE, "assignments.toml"), "rb") as f:
        return tomllib.load(f)


def checks_of(assignment):
    """[(test name, the check in words, the assignment's functions it calls)] from its check
    file, in file order; a check that calls none of them by name is said to look at all."""
    with open(os.path.join(os.path.dirname(COURSE), assignment["checks"])) as f:
        tree = ast.parse(f.read())
    parts = {spec: {p for p in spec.split("::")[1].split(".") if not p.startswith("__")}
             for spec in assignment["functions"]}                   # Block.__init__ -> {Block}
    checks = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            names = {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(node)
                     if isinstance(n, (ast.Attribute, ast.Name))}
            called = [spec for spec, wanted in parts.items() if names & wanted] or list(parts)
            words = node.name[len("test_"):].replace("_", " ")
            for spec in assignment["functions"]:                    # mask ratio -> mask_ratio
                name = spec.split("::")[1].split(".")[-1]
                words = words.replace(name.replace("_", " "), name)
            checks.append((node.name, words, called))
    return checks


def run_checks(name, assignment, folder, full=False):
    environment = dict(os.environ, COURSE_DIR=folder)
    brief = [] if full else ["--brief", "--tb=no", "-rN", "--disable-warnings"]
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *brief,
               "-m", name.lower(), os.path.join(os.path.dirname(COURSE), assignment["checks"])]
    return subprocess.run(command, cwd=folder, env=environment, check=False).returncode


def training_run(name, assignment, folder):
    """The assignment's run in a new folder under runs/; returns its last evaluation's metrics,
    or None if it failed."""
    script, *arguments = assignment["run"]["command"].split()
    out = os.path.join(folder, "runs", f"course-{name}-{time.strftime('%Y%m%d-%H%M%S')}")
    print(f"{name}: python {assignment['run']['command']} --out {out}", flush=True)
    trained = subprocess.run([sys.executable, script, *arguments, "--out", out], cwd=folder,
                             check=False)
    if trained.returncode != 0:
        return None
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f][-1]


def seen_of(last, reading):
    """The mean of a reading over the seen compositions (objects.py: its one trained number)."""
    if not isinstance(last[reading], dict):
        return last[reading]
    return sum(last[reading][code] for code in SEEN) / len(SEEN)


def the_question(last):
    """The lines a run ends on: what was never trained beside what was, on both readings."""
    if "acc" not in last:                           # objects.py: more objects than trained
        return [f"4 to 10 objects asked (never trained): exact {100 * last['beyond']:.1f}%, "
                f"found {100 * last['found_beyond']:.1f}%",
                f"1 to 3 objects asked (as trained):     exact {100 * last['trained']:.1f}%, "
                f"found {100 * last['found_trained']:.1f}%"]
    return [f"111 (level-2, never seen): composed {100 * last['acc']['111']:.1f}%, "
            f"probe {100 * last['probe_acc']['111']:.1f}%",
            f"seen (000 001 010 100):    composed {100 * seen_of(last, 'acc'):.1f}%, "
            f"probe {100 * seen_of(last, 'probe_acc'):.1f}%"]


def main(argv=None):
    assignments = load_assignments()
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("assignment", choices=list(assignments))
    parser.add_argument("--dir", default=os.path.dirname(COURSE),
                        help="the repository (or student copy) to check")
    parser.add_argument("--run", action="store_true", help="add the short training run")
    parser.add_argument("--full", action="store_true",
                        help="pytest's full report (traceback, values) of each failure")
    args = parser.parse_args(argv)
    folder = os.path.abspath(args.dir)
    if not os.path.isfile(os.path.join(folder, "data.py")):
        parser.error(f"--dir {args.dir}: no data.py there; "
                     "give the repository or a student copy")
    assignment = assignments[args.assignment]
    status = run_checks(args.assignment, assignment, folder, args.full)
    if status != 0 or not args.run:
        return status
    mark, reading = assignment["run"]["pass_seen"], assignment["run"]["reading"]
    last = training_run(args.assignment, assignment, folder)
    if last is None:
        print(f"{args.assignment}: the training run failed (see its error above)")
        return 1
    seen = seen_of(last, reading)
    verdict = "pass" if seen >= mark else "not yet"
    print(f"{args.assignment}: samples {READINGS[reading][0]} read right ({reading}): "
          f"{100 * seen:.1f}% (pass mark {100 * mark:.0f}%): {verdict}")
    print("\n".join(f"{args.assignment}: {line}" for line in the_question(last)))
    return 0 if seen >= mark else 1


if __name__ == "__main__":
    sys.exit(main())
