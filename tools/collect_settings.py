"""What a row of collect.py's tables says of a setting's runs (runs that differ only in --seed and
--out): the setting's name, the script and the fewest flags whose command gives its settings (by
which collect.load groups runs, and each row begins with), its seeds, and the commit(s) its code
was at. Named for that unit: every table's row is a setting.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import data
import runs

NOT_A_SETTING = ("seed", "out", "resume", "device", "keep_checkpoints", "compile")
RETIRED = {"label_smoothing": 0.0, "factored_head": False}   # flags of the code of kept runs, at
# the value they had unset: a kept run that set one shows it in its command, as it was run
NOT_RECORDED = "not recorded"                       # a run whose config.json holds no provenance


def defaults(model, argv=()):
    """What `python <model>.py ARGV` runs: every flag at the value its own parser gives it."""
    _, args = runs.script(model).parse(list(argv))
    return {k: v for k, v in vars(args).items() if k not in NOT_A_SETTING}


def setting(config):
    """'dit.py --cond dropout' for a run's config: the script and the fewest flags whose command
    gives its settings (ar.py's tokenizer follows its head), seed, folder and device left out."""
    def value(k):
        if config[k] is True:
            return [f"--{k.replace('_', '-')}"]
        shown = ",".join(map(str, config[k])) if isinstance(config[k], list) else str(config[k])
        return [f"--{k.replace('_', '-')}", shown]

    def moved(flags):
        """The settings the command with these flags gets wrong, in name order."""
        argv = [word for k in flags for word in value(k)]
        given = defaults(config["model"], argv)
        return [k for k, v in sorted(given.items()) if config.get(k, v) != v]
    flags = ["world"] if config.get("world", data.NAME) != data.NAME else []   # it sets defaults
    # then one flag at a time, until the command gives them all
    while wrong := moved(flags):
        flags = sorted(flags + wrong[:1])
    flags = sorted(flags + [k for k, unset in RETIRED.items() if config.get(k, unset) != unset])
    name = " ".join([f"{config['model']}.py", *(" ".join(value(k)) for k in flags)])
    return f"{name} (resampled)" if "resampled_from" in config else name   # tools/resample.py


def commit(config):
    """The commit a run's code was at, short ('58b7623'), from its config.json's provenance."""
    recorded = config.get("provenance")
    if not recorded:
        return NOT_RECORDED
    short = recorded["commit"][:7]
    return f"{short} (uncommitted changes)" if recorded.get("uncommitted_changes") else short


def commits(members):
    """The commit of a setting's runs ('58b7623'), or each with its seeds where they differ:
    '3237423 (seed 0), 58b7623 (seeds 1, 2)'."""
    seeds = {}                                                  # commit -> its seeds, in order
    for _, config, _ in members:
        seeds.setdefault(commit(config), []).append(str(config["seed"]))
    if len(seeds) == 1:
        return next(iter(seeds))
    return ", ".join(f"{code} (seed{'s' * (len(s) > 1)} {', '.join(s)})"
                     for code, s in seeds.items())


def seeds_of(members):
    return ", ".join(str(config["seed"]) for _, config, _ in members)
