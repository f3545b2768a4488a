"""The ladder is a diff: the backbone pieces are copied on purpose into every generator, so
that each file stands alone. This test keeps the copies the same text, so a fix made in one
file cannot drift away from the others."""
import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATORS = ["dit.py", "maskgit.py", "givt.py", "mar.py", "ar.py"]
SHARED = {   # name -> the files that must hold the same copy
    "sincos_positions": GENERATORS,
    "modulate": GENERATORS,
    "ConditionEmbedding": GENERATORS,
    "Block": GENERATORS,
    "SCALE_FLOOR": ["givt.py", "ar.py"],
    "log_density": ["givt.py", "ar.py"],
    "choose_component": ["givt.py", "ar.py"],
    "timestep_embedding": ["dit.py", "mar.py"],
    "draw_time": ["dit.py", "mar.py"],
    "mask_ratio": ["maskgit.py", "givt.py", "mar.py"],
    "random_mask": ["maskgit.py", "givt.py", "mar.py"],
    "remask_count": ["maskgit.py", "givt.py", "mar.py"],
}


def definitions(path):
    """name -> the whole lines of each top-level definition or constant, decorators and comments
    on its last line included (a comment is part of what a reader reads)."""
    lines = open(os.path.join(ROOT, path)).read().splitlines()
    found = {}
    for node in ast.parse("\n".join(lines)).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            name = node.name
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        else:
            continue
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        # a course copy's blanked function names its own file ("A3: write dit.py::noisy"): not a
        # drift
        found[name] = re.sub(r"write \w+\.py::", "write ",
                             "\n".join(lines[first - 1:node.end_lineno]))
    return found


@pytest.mark.parametrize("name", list(SHARED))
def test_each_shared_piece_is_the_same_text_in_every_file(name):
    copies = {path: definitions(path).get(name) for path in SHARED[name]}
    missing = [path for path, text in copies.items() if text is None]
    assert not missing, f"{name} is missing from {missing}"
    first = SHARED[name][0]
    for path, text in copies.items():
        assert text == copies[first], (f"{name} in {path} differs from {first}: change every copy "
                                       "together")


def test_no_file_defines_a_piece_twice():
    for path in GENERATORS + ["jepa_maskgit.py"]:
        source = open(os.path.join(ROOT, path)).read()
        names = [n.name for n in ast.parse(source).body
                 if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert len(names) == len(set(names)), path


def test_the_generators_share_one_backbone_setting():
    """Optimiser, data, precision and schedule are written the same way in every generator, each
    value read from the block (DEFAULTS) through the config (width, depth and heads are flags of
    runs.add_common_arguments, at the block's values)."""
    lines = ['runs.add_common_arguments(parser, ', 'formatter_class=runs.Help)',
             'generator = torch.Generator(device).manual_seed(config["seed"])',
             ('optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"], '
              'betas=config["adamw_betas"],\n                                  '
              'weight_decay=config["weight_decay"])'),
             'scaler = runs.grad_scaler(device)',
             'model, tokenizer = build(config)',
             ('training = data.TrainingData(config["data"], config["train_per_comp"], '
              'tokenizer.encode, device)'),
             'ema = runs.ema_copy(model)',
             'batch, latents = training.batch(config["batch_size"], generator)',
             'group["lr"] = runs.learning_rate(config, step)',
             'with runs.autocast(device):',
             'scaler.scale(loss).backward()\n        scaler.unscale_(optimizer)',
             ('torch.nn.utils.clip_grad_norm_(model.parameters(), config["clip_norm"])\n'
              '        scaler.step(optimizer)\n        scaler.update()'),
             'decay = min(config["ema_decay"], (1 + step) / (10 + step))',
             'loss = loss.item()']
    for path in GENERATORS:
        source = open(os.path.join(ROOT, path)).read()
        for line in lines:
            assert line in source, f"{path} lacks: {line}"


ALLOWED = {("dit.py", "lr"): 2e-3}     # DiT's own rate, from the recipe study (results/README.md)


def test_every_generator_trains_with_the_same_block_of_defaults_but_the_differences_named():
    """DEFAULTS, the block at the top of each config section, holds the same values in every
    generator but for ALLOWED; jepa_maskgit.py reads maskgit.py's; and each value is what the
    flag (or, for what no flag changes, the config) starts at, so --help and config.json show it."""
    import importlib
    first = importlib.import_module("maskgit").DEFAULTS
    for path in GENERATORS + ["jepa_maskgit.py"]:
        module = importlib.import_module(path[:-3])
        block = getattr(module, "DEFAULTS", None) if path != "jepa_maskgit.py" else first
        assert path != "jepa_maskgit.py" or not hasattr(module, "DEFAULTS"), "jepa: maskgit's block"
        differs = {key for key in first if block[key] != first[key]}
        assert set(block) == set(first) and differs == {k for p, k in ALLOWED if p == path}, path
        assert all(block[key] == value for (p, key), value in ALLOWED.items() if p == path), path
        config = vars(module.parse([])[1])
        assert {key: config[key] for key in block} == block, path
    assert not hasattr(importlib.import_module("runs"), "CONSTANTS")    # no code written as strings


def test_the_copies_are_compared_with_their_comments():
    """A comment at the end of a copied definition's last line is part of the copy."""
    source = definitions("dit.py")["ConditionEmbedding"]
    assert source.rstrip().endswith("# (B, D)"), source[-80:]


def test_every_generator_offers_build_draw_and_its_sampling_settings():
    """What tools/ and inside.py use of a generator, and nothing else: parse, build, draw,
    SAMPLING."""
    import importlib
    import runs
    for name in runs.MODELS:
        module = importlib.import_module(name)
        parser, args = module.parse([])
        model, tokenizer = module.build(vars(args))
        assert all(key in vars(args) for key in module.SAMPLING), name
        assert callable(module.draw) and hasattr(tokenizer, "decode")
        assert sum(p.numel() for p in model.parameters())
