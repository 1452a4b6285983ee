"""How a torch tensor reaches the library (docs/pytorch.md): contiguous, 16-byte aligned storage
read and written in place, on the tensor's device — the host emulation device for CPU tensors,
torch's current CUDA stream for CUDA tensors."""

import os

import torch

from . import _C
from .errors import FAMILIES

# rudnn::DType's numbers (include/rudnn/dtype.h). bool is stored as bytes (a mask).
F32, F16, BF16, U32, I32, I64, FP8E4M3, U8 = range(8)
_CODES = {
    torch.float32: F32, torch.float16: F16, torch.bfloat16: BF16, torch.int32: I32, torch.int64: I64,
    torch.uint8: U8, torch.bool: U8, torch.float8_e4m3fn: FP8E4M3,
}
if hasattr(torch, "uint32"):
    _CODES[torch.uint32] = U32
_ALIGNMENT = 16  # rudnn::Tensor::kViewAlignment

_HOST = (0, 0, 0)


def prepare(family, argument, tensor):
    """The tensor as the library takes it: a supported dtype, contiguous, 16-byte aligned (a copy
    when it is not; the caller keeps the returned tensor alive for the call)."""
    if not isinstance(tensor, torch.Tensor):
        raise FAMILIES[family]("InvalidValue", argument, "a torch.Tensor", type(tensor).__name__)
    if tensor.dtype not in _CODES:
        raise FAMILIES[family]("UnsupportedDType", argument, "a rudnn dtype (float32, float16, bfloat16, ...)",
                               str(tensor.dtype).removeprefix("torch."))
    if not tensor.is_contiguous():
        tensor = tensor.contiguous()
    if tensor.data_ptr() % _ALIGNMENT:
        tensor = tensor.clone()
    return tensor


def prepare_optional(family, argument, tensor):
    return None if tensor is None else prepare(family, argument, tensor)


def arg(tensor, code=None):
    """(address, shape, dtype code) of a prepared tensor; `code` overrides the dtype (an int32 tensor
    holding U32 indices)."""
    if tensor is None:
        return None
    return (tensor.data_ptr(), tuple(tensor.shape), _CODES[tensor.dtype] if code is None else code)


def place(family, **tensors):
    """Where the call runs: every tensor given must be on the first one's device."""
    device = None
    first = None
    for name, tensor in tensors.items():
        if tensor is None:
            continue
        if device is None:
            device, first = tensor.device, name
        elif tensor.device != device:
            raise FAMILIES[family]("DeviceMismatch", name, f"the device of {first} ({device})", str(tensor.device))
    if device is None or device.type == "cpu":
        return _HOST
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return (1, index, torch.cuda.current_stream(device).cuda_stream)
    raise FAMILIES[family]("Unsupported", first, "a CPU or CUDA tensor", str(device))


# RUDNN_TORCH_POISON=1 (the tests): outputs start as NaN (0xFF bytes for integers), so an element the
# library forgot to write cannot pass for a result.
_POISON = os.environ.get("RUDNN_TORCH_POISON") == "1"


def empty(shape, dtype, like):
    """An output from torch's allocator (its caching allocator on CUDA) on `like`'s device."""
    out = torch.empty(shape, dtype=dtype, device=like.device)
    if _POISON and out.numel():
        out.view(-1).view(torch.uint8).fill_(0xFF)
    return out


def option(family, argument, value, choices):
    """A string option's number, or the family's InvalidValue naming it."""
    if value not in choices:
        raise FAMILIES[family]("InvalidValue", argument, "one of " + ", ".join(sorted(choices)), repr(value))
    return choices[value]
