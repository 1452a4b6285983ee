"""The torch.library namespace `rudnn` (torch.ops.rudnn.*). Each op is defined once by schema with
a real kernel for CPU (the host emulation device) and CUDA tensors and a fake kernel that computes
the output's shape and dtype only, so torch.compile traces through without a graph break."""

import torch

from .errors import FAMILIES

LIBRARY = torch.library.Library("rudnn", "DEF")


def define(schema, kernel, fake, family=None):
    """Defines `rudnn::<schema>`; `kernel` serves CPU and CUDA tensors, `fake` the tracing. With
    `family` the op is forward-only: a backward through it raises the family's Unsupported error
    instead of silently giving no gradient."""
    name = schema.split("(", 1)[0]
    LIBRARY.define(schema)
    LIBRARY.impl(name, kernel, "CPU")
    LIBRARY.impl(name, kernel, "CUDA")
    torch.library.register_fake(f"rudnn::{name}", fake, lib=LIBRARY)
    if family is not None:
        def no_backward(ctx, *grads):
            raise FAMILIES[family]("Unsupported", name, "an op with a backward",
                                   "forward-only (the library has no backward for it; docs/pytorch.md)")

        torch.library.register_autograd(f"rudnn::{name}", no_backward, lib=LIBRARY)
    return getattr(torch.ops.rudnn, name).default
