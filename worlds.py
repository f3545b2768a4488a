"""The worlds a generator can learn, by name (`--world`): data.py's Shapes2D, the default, and the
worlds beside it, each one file with data.py's interface (its docstring lists the names)."""
import data
import shapes3d

WORLDS = {"shapes2d": data, "shapes3d": shapes3d}


def world(name):
    """The module of the world of that name; a config (a dict) names it under "world"."""
    name = name.get("world", data.NAME) if isinstance(name, dict) else name
    if name not in WORLDS:
        raise SystemExit(f"error: unknown world {name!r}; choose from {', '.join(WORLDS)}")
    return WORLDS[name]
