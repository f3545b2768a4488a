"""The worlds a generator can learn, by name (`--world`): data.py's Shapes2D, the default, and the
worlds beside it, each one file of this folder with data.py's interface (its docstring lists the
names). A new world is one file here and one line in WORLDS (bars.py is course assignment A11's:
a student writes one). The folder also holds the objects' world (objects_world.py,
studies/objects.py's own) and Shapes2D's calibration suite (shapes2d_calibration.py, what
judge.py's "legible" is set by)."""
import data
from worlds import bars, clips, shapes3d

WORLDS = {"shapes2d": data, "shapes3d": shapes3d, "clips": clips, "bars": bars}


def world(name):
    """The module of the world of that name; a config (a dict) names it under "world", and under
    "seen_count" how many of its seen codes generators learn from (None: all; the world's
    narrowed())."""
    config = name if isinstance(name, dict) else {"world": name}
    name, count = config.get("world", data.NAME), config.get("seen_count")
    if name not in WORLDS:
        raise SystemExit(f"error: unknown world {name!r}; choose from {', '.join(WORLDS)}")
    if count is None:
        return WORLDS[name]
    if not hasattr(WORLDS[name], "narrowed"):
        raise ValueError(f"--seen-count {count}: world {name!r} has one seen set")
    return WORLDS[name].narrowed(count)
