"""The course checks import the repository in COURSE_DIR (a student copy), or the one they
sit in. They run on a CPU in float32, and supply their own masks, noise and stub models."""
import os
import sys
import tomllib

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.environ.get("COURSE_DIR", os.path.join(HERE, "..", ".."))))
torch.set_num_threads(min(2, torch.get_num_threads()))


def pytest_configure(config):
    with open(os.path.join(HERE, "..", "assignments.toml"), "rb") as f:
        for name, assignment in tomllib.load(f).items():
            config.addinivalue_line("markers", f"{name.lower()}: {assignment['title']}")
