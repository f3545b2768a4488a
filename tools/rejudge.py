"""Judge a run's kept samples again: every evaluation's readings, recomputed with probe.py as it stands.

    python tools/rejudge.py runs/dit runs/dit-seed1 ...

Each evaluation keeps its samples (samples/step_N.npz), so a changed judge re-reads a run
without training it again; metrics.jsonl (the loss and wall times kept), samples.png and
curves.png are rewritten.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runs  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", help="run folders")
    for folder in parser.parse_args(argv).folders:
        last = runs.rejudge(folder)[-1]
        print(f"{folder}: step {last['step']}: seen {100 * last['seen']:.1f} | level-1 {100 * last['level1']:.1f} "
              f"| level-2 {100 * last['level2']:.1f}")


if __name__ == "__main__":
    main()
