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
    """Defines `rudnn::<schema>` with its fake kernel; returns the op's default overload."""
    name = schema.split("(", 1)[0]
    LIBRARY.define(schema)
    torch.library.register_fake(f"rudnn::{name}", fake, lib=LIBRARY)
    return getattr(torch.ops.rudnn, name).default
