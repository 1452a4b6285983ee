"""The torch.library namespace `rudnn` (torch.ops.rudnn.*). Each op's schema is defined here with
its fake kernel (the output's shape and dtype only, so torch.compile traces through without a graph
break); its real kernels for CPU tensors (the host emulation device) and CUDA tensors, and its
autograd, are C++ in rudnn._C, registered with torch's dispatcher when that module loads
(python/src/call.h, docs/pytorch.md)."""

import torch

from . import _C  # noqa: F401  (loading it registers the C++ kernels)
from .errors import FAMILIES

_C.set_error_classes(FAMILIES)

LIBRARY = torch.library.Library("rudnn", "DEF")


def define(schema, fake):
    """Defines `rudnn::<schema>` with its fake kernel; returns the op's default overload. The fake
    kernel runs for meta and fake tensors; it first checks that the tensors share one device (a 0-dim
    CPU tensor, such as a paged plan's generation, may differ), since eager torch also sends a call
    mixing a meta tensor with real ones here, where the fake's output would be uninitialized memory.
    The error names the meta tensor when there is one, else the first on another device."""
    name = schema.split("(", 1)[0]
    LIBRARY.define(schema)
    op = getattr(torch.ops.rudnn, name).default
    family = FAMILIES[fake.__module__.rsplit(".", 1)[-1]]
    names = [argument.name for argument in op._schema.arguments]

    def checked(*args, **kwargs):
        tensors = [(argument, value.device) for argument, value in zip(names, args)
                   if isinstance(value, torch.Tensor) and not (value.dim() == 0 and value.device.type == "cpu")]
        devices = {device for _, device in tensors}
        if len(devices) > 1:
            metas = [t for t in tensors if t[1].type == "meta"]
            culprit = metas[0] if metas and len(metas) < len(tensors) else \
                next(t for t in tensors if t[1] != tensors[0][1])
            reference = next(t for t in tensors if t[1] != culprit[1])
            raise family("DeviceMismatch", culprit[0], f"the device of {reference[0]} ({reference[1]})",
                         str(culprit[1]))
        return fake(*args, **kwargs)

    torch.library.register_fake(f"rudnn::{name}", checked, lib=LIBRARY)
    return op
