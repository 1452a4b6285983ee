"""rudnn for PyTorch (SPEC §12, docs/pytorch.md).

Every operator is a custom op under ``torch.ops.rudnn.*`` with a fake kernel (torch.compile traces
through it) and, where the library has a backward, autograd. rudnn reads and writes the torch
tensors' storage in place: CUDA tensors on torch's current stream, CPU tensors on the host emulation
device (which runs the very same kernel templates on the CPU). A rejected call raises the family's
``rudnn.Error`` subclass and has written nothing.
"""

import torch  # noqa: F401  (the ops register into torch.library)

from . import attention, convolution, gated_delta, moe, normalization, paged_attention
from .errors import (AttentionSetupError, ConvSetupError, Error, GatedDeltaError, MoeError, NormalizationError,
                     PagedAttentionError)

__all__ = ["attention", "convolution", "gated_delta", "moe", "normalization", "paged_attention", "Error", "NormalizationError",
           "AttentionSetupError", "ConvSetupError", "GatedDeltaError", "MoeError", "PagedAttentionError"]
