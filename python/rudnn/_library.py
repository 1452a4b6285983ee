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
    tensor, such as a paged plan's CPU generation, may differ), since eager torch also sends a call
    mixing a meta tensor with real ones here, where the fake's output would be uninitialized memory."""
    name = schema.split("(", 1)[0]
    LIBRARY.define(schema)
    op = getattr(torch.ops.rudnn, name).default
    family = FAMILIES[fake.__module__.rsplit(".", 1)[-1]]
    names = [argument.name for argument in op._schema.arguments]

    def checked(*args, **kwargs):
        first = None
        for argument, value in zip(names, args):
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                if first is None:
                    first = (argument, value.device)
                elif value.device != first[1]:
                    raise family("DeviceMismatch", argument, f"the device of {first[0]} ({first[1]})",
                                 str(value.device))
        return fake(*args, **kwargs)

    torch.library.register_fake(f"rudnn::{name}", checked, lib=LIBRARY)
    return op
