"""Run one assignment's checks, and optionally its short training run.

    python course/check.py A3                  # the checks: seconds, on a CPU
    python course/check.py A3 --run            # then a short training run, judged by probe.py
    python course/check.py A3 --dir ../a3-student

The checks import the code in --dir (default: the repository this file sits in). Each
failure says what was expected. The run trains the assignment's model for a few minutes
and passes when its samples of the seen compositions are read right often enough.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import tomllib

COURSE = os.path.dirname(os.path.abspath(__file__))
SEEN = ("000", "001", "010", "100")


def load_assignments():
    with open(os.path.join(COURSE, "assignments.toml"), "rb") as f:
        return tomllib.load(f)


def run_checks(name, assignment, folder, extra=()):
    environment = dict(os.environ, COURSE_DIR=folder)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", name.lower(),
               os.path.join(os.path.dirname(COURSE), assignment["checks"]), *extra]
    return subprocess.run(command, cwd=folder, env=environment).returncode


def training_run(name, assignment, folder):
    """The assignment's run in a new folder under runs/; returns the seen mean of its reading."""
    script, *arguments = assignment["run"]["command"].split()
    out = os.path.join(folder, "runs", f"course-{name}-{time.strftime('%Y%m%d-%H%M%S')}")
    print(f"{name}: python {assignment['run']['command']} --out {out}", flush=True)
    if subprocess.run([sys.executable, script, *arguments, "--out", out], cwd=folder).returncode != 0:
        return None
    with open(os.path.join(out, "metrics.jsonl")) as f:
        last = [json.loads(line) for line in f][-1]
    reading = assignment["run"]["reading"]
    return sum(last[reading][code] for code in SEEN) / len(SEEN)


def main(argv=None):
    assignments = load_assignments()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("assignment", choices=list(assignments))
    parser.add_argument("--dir", default=os.path.dirname(COURSE), help="the repository (or student copy) to check")
    parser.add_argument("--run", action="store_true", help="add the short training run")
    args = parser.parse_args(argv)
    folder = os.path.abspath(args.dir)
    if not os.path.isfile(os.path.join(folder, "data.py")):
        parser.error(f"--dir {args.dir}: no data.py there; give the repository or a student copy")
    assignment = assignments[args.assignment]
    status = run_checks(args.assignment, assignment, folder)
    if status != 0 or not args.run:
        return status
    mark, reading = assignment["run"]["pass_seen"], assignment["run"]["reading"]
    seen = training_run(args.assignment, assignment, folder)
    if seen is None:
        print(f"{args.assignment}: the training run failed (see its error above)")
        return 1
    verdict = "pass" if seen >= mark else "not yet"
    print(f"{args.assignment}: seen compositions read right ({reading}): {100 * seen:.1f}% "
          f"(pass mark {100 * mark:.0f}%): {verdict}")
    return 0 if seen >= mark else 1


if __name__ == "__main__":
    sys.exit(main())
