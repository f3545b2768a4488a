"""The ladder is a diff: the backbone pieces are copied on purpose into every generator, so
that each file stands alone. This test keeps the copies the same text, so a fix made in one
file cannot drift away from the others."""
import ast
import os
import re

import pytest

import scripts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATORS = ["dit.py", "maskgit.py", "givt.py", "mar.py", "studies/ar.py"]
LADDER = ["maskgit.py", "givt.py", "mar.py", "dit.py"]
SHARED = {   # name -> the files that must hold the same copy
    "sincos_positions": GENERATORS,
    "modulate": GENERATORS,
    "ConditionEmbedding": GENERATORS,
    "Block": GENERATORS,
    "parse": LADDER,
    "get_config": GENERATORS,
    "main": GENERATORS,
    "SCALE_FLOOR": ["givt.py", "studies/ar.py"],
    "log_density": ["givt.py", "studies/ar.py"],
    "choose_component": ["givt.py", "studies/ar.py"],
    "timestep_embedding": ["dit.py", "mar.py"],
    "draw_time": ["dit.py", "mar.py"],
    "mask_ratio": ["maskgit.py", "givt.py", "mar.py"],
    "random_mask": ["maskgit.py", "givt.py", "mar.py"],
    "remask_count": ["maskgit.py", "givt.py", "mar.py"],
}


def definitions(path):
    """name -> the whole lines of each top-level definition or constant, decorators and comments
    on its last line included (a comment is part of what a reader reads)."""
    lines = open(os.path.join(ROOT, scripts.where(path))).read().splitlines()
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
        source = open(os.path.join(ROOT, scripts.where(path))).read()
        names = [n.name for n in ast.parse(source).body
                 if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert len(names) == len(set(names)), path


def test_the_generators_share_one_training_loop_but_its_loss():
    """Optimiser, data, precision, schedule, EMA, evaluation and checkpoints are one text in every
    generator of the ladder; only the lines that compute the loss (under runs.autocast) are each
    method's own (and maskgit.py's first line takes the build of maskgit_factored.py)."""
    def loop(path):
        lines = definitions(path)["train"].splitlines()[1:]                 # after `def train(`
        start = lines.index("        with runs.autocast(device):                                "
                            "         # bf16 or fp16 on a GPU")
        end = lines.index("        optimizer.zero_grad(set_to_none=True)")
        return lines[:start + 1] + lines[end:]
    for path in LADDER + ["studies/ar.py"]:
        assert loop(path) == loop("dit.py"), f"{path}'s train differs from dit.py's beyond its loss"


def test_a_student_follows_the_loop_with_at_most_six_names_from_other_files():
    """Each name train() reads from another file of the project (runs.X, data.X, or a name imported
    from one) is one more place a reader must look; a generator's loop needs at most seven, the
    world it learns (worlds.world) among them (jepa_maskgit.py's, beside them, reads maskgit.py's
    build and draw: the file it extends)."""
    project = {name[:-3] for name in os.listdir(ROOT) if name.endswith(".py")} | {"worlds"}
    for path in GENERATORS + ["jepa_maskgit.py", "studies/objects.py"]:
        tree = ast.parse(open(os.path.join(ROOT, scripts.where(path))).read())
        imported = {alias.asname or alias.name: node.module for node in tree.body
                    if isinstance(node, ast.ImportFrom) and node.module in project
                    for alias in node.names}
        train = next(node for node in tree.body if getattr(node, "name", None) == "train")
        names = {f"{node.value.id}.{node.attr}" for node in ast.walk(train)
                 if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                 and node.value.id in project}
        names |= {f"{imported[node.id]}.{node.id}" for node in ast.walk(train)
                  if isinstance(node, ast.Name) and node.id in imported}
        extended = {"maskgit.build", "maskgit.draw"} if path == "jepa_maskgit.py" else set()
        assert len(names - extended) <= 7, f"{path}'s loop reads {sorted(names)}"


def diff_count(a, b):
    """The lines a shortest diff from file a to file b changes, removed plus added (what `diff a b`
    shows): the lines of both less twice their longest common subsequence."""
    old, new = (open(os.path.join(ROOT, scripts.where(path))).read().splitlines()
                for path in (a, b))
    longest = [0] * (len(new) + 1)
    for line in old:
        previous = longest[:]
        for j, other in enumerate(new):
            longest[j + 1] = previous[j] + 1 if line == other else max(previous[j + 1], longest[j])
    return len(old) + len(new) - 2 * longest[-1]


LIMITS = {("maskgit.py", "givt.py"): 130, ("givt.py", "mar.py"): 242, ("mar.py", "dit.py"): 224}


def test_the_ladder_is_a_diff_neighbours_differ_by_little_more_than_objective_head_sampler():
    """diff maskgit.py givt.py shows objective, head, sampler and the tokens they need: the
    changed lines of each neighbouring pair stay within its limit."""
    counts = {pair: diff_count(*pair) for pair in LIMITS}
    print(" | ".join(f"{a} -> {b}: {n} lines" for (a, b), n in counts.items()))
    for pair, n in counts.items():
        assert n <= LIMITS[pair], f"diff {' '.join(pair)} changes {n} lines, over {LIMITS[pair]}"


ALLOWED = {("dit.py", "lr"): 2e-3}     # DiT's own rate, from results/recipe/README.md
RECIPE = ("steps", "batch_size", "lr", "lr_schedule", "warm_up_steps", "weight_decay", "ema_decay",
          "adamw_betas", "clip_norm", "width", "depth", "heads", "world", "seen_count", "data",
          "train_per_comp", "cond", "cond_drop", "eval_every", "samples_per_comp")


def test_every_generator_trains_with_the_same_recipe_and_its_block_holds_every_knob():
    """DEFAULTS, the block at the top of each config section, starts with the ladder's recipe, the
    same values in every generator but for ALLOWED; it holds every value a run is configured with
    (each flag starts at its value, so --help and config.json show it); jepa_maskgit.py and
    maskgit_factored.py take maskgit.py's."""
    import importlib
    first = importlib.import_module("maskgit").DEFAULTS
    outside = {"seed", "device", "out", "resume", "keep_checkpoints", "compile"}   # not knobs
    for path in GENERATORS + ["jepa_maskgit.py", "studies/maskgit_factored.py"]:
        module = scripts.module_of(path)
        block = module.DEFAULTS
        assert list(block)[:len(RECIPE)] == list(RECIPE), path
        differs = {key for key in RECIPE if block[key] != first[key]}
        assert differs == {k for p, k in ALLOWED if p == path}, path
        assert all(block[key] == value for (p, key), value in ALLOWED.items() if p == path), path
        if path in ("jepa_maskgit.py", "studies/maskgit_factored.py"):
            assert all(block[key] == value for key, value in first.items()), path
        config = vars(module.parse([])[1])
        assert set(config) - outside == set(block), (path, set(config) ^ set(block))
        ar_resolves = {"tokenizer"} if path == "studies/ar.py" else set()   # None: the head's own
        assert {key: config[key] for key in block if key not in ar_resolves} == \
            {key: value for key, value in block.items() if key not in ar_resolves}, path
    assert not hasattr(importlib.import_module("runs"), "CONSTANTS")    # no code written as strings


def test_the_copies_are_compared_with_their_comments():
    """A comment at the end of a copied definition's last line is part of the copy."""
    source = definitions("dit.py")["ConditionEmbedding"]
    assert source.rstrip().endswith("# (B, D)"), source[-80:]


def test_every_generator_offers_build_draw_and_its_sampling_settings():
    """What tools/ and inside.py use of a generator, and nothing else: parse, build, draw,
    SAMPLING."""
    import runs
    for name in runs.MODELS:
        module = runs.script(name)
        parser, args = module.parse([])
        model, tokenizer = module.build(vars(args))
        assert all(key in vars(args) for key in module.SAMPLING), name
        assert callable(module.draw) and hasattr(tokenizer, "decode")
        assert sum(p.numel() for p in model.parameters())
