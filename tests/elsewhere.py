"""A device that is not the CPU's, on a machine that has only a CPU: tests/test_devices.py runs
the generators there to catch a tensor made on the wrong device without a GPU.

Inside `elsewhere()`, a tensor on "meta" is a CPU tensor in disguise (Away): it says it is on
meta and computes on the CPU. As on a GPU, an operation that mixes it with a CPU tensor (one
that is not 0-dim) fails, and so does a random draw on one side by a generator of the other;
torch.Generator("meta") makes a generator of this device. Every copy from one side to the other
and every wait for a number of the device (.item(), int(), bool()) is counted in `crossings`.
"""
import contextlib
import copy

import torch
from torch.utils._python_dispatch import TorchDispatchMode

ELSEWHERE = torch.device("meta")
MARK = 2 ** 60           # a generator of the device is seeded from here up: so dispatch knows it
COPIES = ("_to_copy", "copy_", "lift_fresh", "_copy_from")
crossings = {"to the device": 0, "to the host": 0}


class Away(torch.Tensor):
    """A CPU tensor (held) that says it is on ELSEWHERE."""

    @staticmethod
    def __new__(cls, held):
        return torch.Tensor._make_wrapper_subclass(cls, held.shape, strides=held.stride(),
                                                   dtype=held.dtype, device=ELSEWHERE,
                                                   requires_grad=held.requires_grad)

    def __init__(self, held):
        self.held = held

    def __repr__(self):
        return f"Away({self.held!r})"

    def __reduce_ex__(self, protocol):      # torch.save keeps the CPU tensor: map_location="cpu"
        return self.held.__reduce_ex__(protocol)

    def __deepcopy__(self, memo):
        twin = Away(copy.deepcopy(self.held, memo)).requires_grad_(self.requires_grad)
        twin.__dict__.update({k: v for k, v in self.__dict__.items() if k != "held"})
        return twin

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return run(func, args, kwargs or {})


class Generator(torch._C.Generator):
    """torch.Generator, and for "meta" a generator of ELSEWHERE (a CPU one, seeded from MARK)."""

    def __new__(cls, device="cpu"):
        return super().__new__(cls, "cpu" if torch.device(device) == ELSEWHERE else device)

    def __init__(self, device="cpu"):
        self.elsewhere = torch.device(device) == ELSEWHERE
        if self.elsewhere:
            super().manual_seed(MARK)

    def manual_seed(self, seed):
        return super().manual_seed(seed + MARK if self.elsewhere else seed)

    @property
    def device(self):
        return ELSEWHERE if self.elsewhere else super().device


def leaves(tree):
    """The tensors in an operation's arguments (lists of them included)."""
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for branch in tree:
            yield from leaves(branch)
    elif isinstance(tree, dict):
        for branch in tree.values():
            yield from leaves(branch)


def tree_map(f, tree):
    if isinstance(tree, (list, tuple)):
        return type(tree)(tree_map(f, branch) for branch in tree)
    return f(tree)


def run(func, args, kwargs):
    """One operation: on the held CPU tensors, with the device's rules checked."""
    name = func.__name__.split(".")[0]
    tensors = list(leaves((args, kwargs)))
    away = any(isinstance(t, Away) for t in tensors)
    here = any(not isinstance(t, Away) and t.dim() > 0 for t in tensors)
    asked = kwargs.get("device")
    there = torch.device(asked) == ELSEWHERE if asked is not None else away
    if name in COPIES:
        if away and asked is not None and not there or name == "copy_" and here and not there:
            crossings["to the host"] += 1
        elif there and here:
            crossings["to the device"] += 1
    elif away and here:
        raise RuntimeError(f"{func}: expected all tensors to be on the same device, but found at "
                           f"least two devices, {ELSEWHERE} and cpu")
    generator = kwargs.get("generator")
    if generator is not None and (generator.initial_seed() >= MARK) != there:
        raise RuntimeError(f"{func}: a generator of {'cpu' if there else ELSEWHERE} drew "
                           f"for a tensor on {ELSEWHERE if there else 'cpu'}")
    if name == "_local_scalar_dense" and away:
        crossings["to the host"] += 1
    def unwrap(t):
        return t.held if isinstance(t, Away) else t
    kwargs = {k: unwrap(v) for k, v in kwargs.items()}
    if asked is not None and there:
        kwargs["device"] = torch.device("cpu")
    out = func(*tree_map(unwrap, args), **kwargs)
    inputs = {id(t.held): t for t in tensors if isinstance(t, Away)}

    def wrap(t):
        if not isinstance(t, torch.Tensor) or isinstance(t, Away):
            return t
        if id(t) in inputs:                                         # in place: the input itself
            return inputs[id(t)]
        return Away(t) if there else t
    return tree_map(wrap, out)


class Device(TorchDispatchMode):
    """Routes what touches ELSEWHERE (a tensor, a device= argument) or draws through run()."""

    @classmethod
    def _should_skip_dynamo(cls):      # and so no import of torch._dynamo (seconds): never compiled
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        asked = kwargs.get("device")
        if (Away in types
                or asked is not None and torch.device(asked) == ELSEWHERE
                or kwargs.get("generator") is not None):
            return run(func, args, kwargs)
        return func(*args, **kwargs)


@contextlib.contextmanager
def elsewhere():
    """The device ELSEWHERE, for the time of the block; crossings counted from 0."""
    crossings.update({key: 0 for key in crossings})
    real = torch.Generator
    torch.Generator = Generator
    try:
        with Device():
            yield ELSEWHERE
    finally:
        torch.Generator = real
