"""The ladder is a diff: the backbone pieces are copied on purpose into every generator, so
that each file stands alone. This test keeps the copies the same text, so a fix made in one
file cannot drift away from the others."""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATORS = ["dit.py", "maskgit.py", "givt.py", "mar.py", "ar.py"]
SHARED = {   # name -> the files that must hold the same copy
    "sincos_positions": GENERATORS,
    "modulate": GENERATORS,
    "ConditionEmbedding": GENERATORS,
    "Block": GENERATORS,
    "Tokens": ["dit.py", "givt.py", "mar.py", "ar.py"],
    "log_density": ["givt.py", "ar.py"],
    "choose_component": ["givt.py", "ar.py"],
    "timestep_embedding": ["dit.py", "mar.py"],
    "draw_time": ["dit.py", "mar.py"],
    "mask_ratio": ["maskgit.py", "givt.py", "mar.py"],
    "random_mask": ["maskgit.py", "givt.py", "mar.py"],
    "remask_count": ["maskgit.py", "givt.py", "mar.py"],
}


def definitions(path):
    source = open(os.path.join(ROOT, path)).read()
    tree = ast.parse(source)
    return {node.name: ast.get_source_segment(source, node) for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


@pytest.mark.parametrize("name", list(SHARED))
def test_each_shared_piece_is_the_same_text_in_every_file(name):
    copies = {path: definitions(path).get(name) for path in SHARED[name]}
    missing = [path for path, text in copies.items() if text is None]
    assert not missing, f"{name} is missing from {missing}"
    first = SHARED[name][0]
    for path, text in copies.items():
        assert text == copies[first], f"{name} in {path} differs from {first}: change every copy together"


def test_no_file_defines_a_piece_twice():
    for path in GENERATORS + ["jepa_maskgit.py"]:
        source = open(os.path.join(ROOT, path)).read()
        names = [n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert len(names) == len(set(names)), path


def test_the_generators_share_one_backbone_setting():
    """Width, depth, heads, optimiser, data and schedule are written the same way in every generator."""
    lines = ['parser.add_argument("--width", type=int, default=128)',
             'parser.add_argument("--depth", type=int, default=4)',
             'parser.add_argument("--heads", type=int, default=4)',
             'optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"], betas=(0.9, 0.99),\n'
             '                                  weight_decay=config["weight_decay"])',
             'training = data.TrainingData(config["data"], config["train_per_comp"], ',
             'batch, latents = training.batch(config["batch_size"], generator)',
             'group["lr"] = runs.learning_rate(config, step)',
             'decay = min(0.999, (1 + step) / (10 + step))',
             'torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)']
    for path in GENERATORS:
        source = open(os.path.join(ROOT, path)).read()
        for line in lines:
            assert line in source, f"{path} lacks: {line}"
