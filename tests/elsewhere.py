"""A device that is not the CPU's, on a machine that has only a CPU: tests/test_devices.py runs
the generators there to catch a tensor made on the wrong device without a GPU.

Inside `elsewhere()`, a tensor on "meta" is a CPU tensor in disguise (Away): it says it is on
meta and computes on the CPU. As on a GPU, an operation that mixes it with a CPU tensor (one
that is not 0-dim) fails, and so does a random draw on one side by a generator of the other;
torch.Generator("meta") makes a generator of this device. Every copy from one side to the other
and every wait for a number of the device (.item(), int(), bool()) is counted in `crossings`.

Every wait a CUDA GPU would make the host do is listed in `waits`, as (what, where: the
repository's file:line that asked for it): a number read (.item(), float(), int(), bool()), a
.tolist(), a copy to the host (.cpu()), a copy to the device (from pageable memory, a blocking
copy: a CPU has no pinned memory, so every one counts here), and an operation whose output's
size the host must know: nonzero, masked_select, unique, bincount, equal, repeat_interleave
without output_size, and indexing with a boolean mask (x[mask], and in the backward the
index_put of its gradient: each a nonzero). Not waits: masked_scatter (its check runs on the
device; its backward is a masked_select, counted), and x[mask] = number (a masked_fill).

`elsewhere(capability=(7, 5))` makes the device a CUDA GPU of that compute capability to runs.py's
precision rule: runs.half_precision picks fp16 (bf16 from 8.0) and runs.grad_scaler scales, and
the device computes in the dtype the autocast asks (its heads in fp32 through runs.full_precision).

`simulated_gpus(monkeypatch, count)` makes torch report a machine of `count` CUDA GPUs (their
count, name, memory and CUDA version), for the tools that count them; nothing runs on them.
"""
import contextlib
import copy
import os
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import runs

ELSEWHERE = torch.device("meta")
MARK = 2 ** 60           # a generator of the device is seeded from here up: so dispatch knows it
COPIES = ("_to_copy", "copy_", "lift_fresh", "_copy_from")
SIZED = {"nonzero": "nonzero", "masked_select": "masked_select", "_unique": "unique",
         "_unique2": "unique", "unique_dim": "unique", "unique_consecutive": "unique",
         "bincount": "bincount", "equal": "torch.equal"}    # the output's size (or bool) is read
INDEXING = ("index", "index_put", "index_put_", "_index_put_impl_")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
crossings = {"to the device": 0, "to the host": 0}
waits = []                                 # (what, where) of each wait a CUDA GPU would make
computing = [None]                         # the dtype the device's autocast asks (None: fp32)


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

    def tolist(self):                       # a copy to the host, read as numbers
        crossings["to the host"] += 1
        waits.append((".tolist()", site()))
        return self.held.tolist()

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


def site():
    """Where the repository's code asked: the innermost file:line of the repository outside this
    file (in a backward, the line that called it, and the node being differentiated)."""
    frame, where = sys._getframe(1), "?"
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(ROOT + os.sep) and path != os.path.abspath(__file__):
            where = f"{os.path.relpath(path, ROOT)}:{frame.f_lineno}"
            break
        frame = frame.f_back
    node = torch._C._current_autograd_node()
    return where if node is None else f"{where}, the backward of {node.name()}"


def copy_ends(name, args, kwargs, away):
    """A copy's (source on the host, destination on the device), as two booleans."""
    if name == "copy_":
        source, destination = args[1], args[0]
    elif name == "_copy_from":
        source, destination = args[0], args[1]
    else:                                             # _to_copy, lift_fresh: a new tensor
        asked = kwargs.get("device")
        return not away, torch.device(asked) == ELSEWHERE if asked is not None else away
    return not isinstance(source, Away), isinstance(destination, Away)


def waited(name, func, args, kwargs):
    """What a CUDA GPU would wait for in this operation on the device, or None."""
    if name in SIZED:
        return SIZED[name]
    if func is torch.ops.aten.repeat_interleave.Tensor and kwargs.get("output_size") is None:
        return "repeat_interleave (no output_size)"
    if name in INDEXING:
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        if not any(i is not None and i.dtype in (torch.bool, torch.uint8) for i in indices):
            return None
        if name != "index":
            value = args[2] if len(args) > 2 else kwargs["values"]
            if value.numel() == 1 and sum(i is not None for i in indices) == 1:
                return None                          # x[mask] = number: a masked_fill, no wait
        return f"boolean-mask {name} (a nonzero)"
    return None


def run(func, args, kwargs):
    """One operation: on the held CPU tensors, with the device's rules checked."""
    name = func.__name__.split(".")[0]
    tensors = list(leaves((args, kwargs)))
    away = any(isinstance(t, Away) for t in tensors)
    here = any(not isinstance(t, Away) and t.dim() > 0 for t in tensors)
    asked = kwargs.get("device")
    there = torch.device(asked) == ELSEWHERE if asked is not None else away
    if name in COPIES:
        from_host, to_device = copy_ends(name, args, kwargs, away)
        there = to_device
        if not from_host and not to_device:
            crossings["to the host"] += 1
            waits.append(("a copy to the host", site()))
        elif from_host and to_device and name != "lift_fresh":
            crossings["to the device"] += 1
            waits.append(("a copy to the device (pageable memory)", site()))
    elif away and here:
        raise RuntimeError(f"{func}: expected all tensors to be on the same device, but found at "
                           f"least two devices, {ELSEWHERE} and cpu")
    generator = kwargs.get("generator")
    if generator is not None and (generator.initial_seed() >= MARK) != there:
        raise RuntimeError(f"{func}: a generator of {'cpu' if there else ELSEWHERE} drew "
                           f"for a tensor on {ELSEWHERE if there else 'cpu'}")
    if name == "_local_scalar_dense" and away:
        crossings["to the host"] += 1
        waits.append(("a number read (.item(), float(), int(), bool())", site()))
    elif away and name not in COPIES:
        what = waited(name, func, args, kwargs)
        if what is not None:
            waits.append((what, site()))
    def unwrap(t):
        return t.held if isinstance(t, Away) else t
    kwargs = {k: unwrap(v) for k, v in kwargs.items()}
    if asked is not None and there:
        kwargs["device"] = torch.device("cpu")
    dtype = computing[-1] if there else None
    halves = {t.dtype for t in tensors if t.dtype in (torch.float16, torch.bfloat16)}
    if dtype is None and halves and torch._C._current_autograd_node() is not None:
        dtype = halves.pop()        # a backward in the half precision its forward computed in:
        # on a GPU the autocast's casts are on the tape, here they are hidden below it
    with torch.autocast("cpu", dtype) if dtype is not None else contextlib.nullcontext():
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


class Autocast:
    """torch.autocast; for the device (and, as a CUDA GPU, for "cuda") the dtype it computes in."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.ours = device_type in (ELSEWHERE.type, "cuda")
        self.dtype = dtype if enabled else None
        if not self.ours:
            self.real = REAL["autocast"](device_type, dtype, enabled, cache_enabled)

    def __enter__(self):
        if not self.ours:
            return self.real.__enter__()
        computing.append(self.dtype)

    def __exit__(self, *exception):
        if not self.ours:
            return self.real.__exit__(*exception)
        computing.pop()


def as_cuda(function):
    """runs' precision function, asked about the device as about a CUDA GPU."""
    def asked(device, *args):
        return function(torch.device("cuda") if torch.device(device) == ELSEWHERE else device,
                        *args)
    return asked


def tensor(data, *args, device=None, requires_grad=False, **kwargs):
    """torch.tensor; on the device made on the host and copied there, as CUDA does (a wait)."""
    if device is None or torch.device(device) != ELSEWHERE:
        return REAL["tensor"](data, *args, device=device, requires_grad=requires_grad, **kwargs)
    return REAL["tensor"](data, *args, **kwargs).to(ELSEWHERE).requires_grad_(requires_grad)


REAL = {"Generator": torch.Generator, "tensor": torch.tensor, "autocast": torch.autocast}


@contextlib.contextmanager
def elsewhere(capability=None):
    """The device ELSEWHERE, for the time of the block; crossings and waits counted from 0. With
    a compute capability (major, minor), to runs.py's precision rule it is a CUDA GPU of it."""
    crossings.update({key: 0 for key in crossings})
    waits.clear()
    computing[:] = [None]
    patch = {(torch, "Generator"): Generator, (torch, "tensor"): tensor}
    if capability is not None:
        patch.update({(torch, "autocast"): Autocast,
                      (torch.cuda, "get_device_capability"): lambda device=None: capability,
                      (torch.cuda, "is_bf16_supported"): lambda *a, **k: True,
                      (runs, "half_precision"): as_cuda(runs.half_precision),
                      (runs, "full_precision"): as_cuda(runs.full_precision)})
    before = {key: getattr(*key) for key in patch}
    for (owner, name), value in patch.items():
        setattr(owner, name, value)
    try:
        with Device():
            yield ELSEWHERE
    finally:
        for (owner, name), value in before.items():
            setattr(owner, name, value)


def simulated_gpus(monkeypatch, count=3):
    """torch as it is on a machine with `count` CUDA GPUs of 80 GiB (none is ever used here)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Simulated GPU")
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device: type("Properties", (), {"total_memory": 80 * 2 ** 30}))
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91000)

