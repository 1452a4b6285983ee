"""torch.ops.rudnn.{layer_norm, rms_norm, softmax_last_axis} against torch in float64."""

import pytest
import torch
import torch.nn.functional as F
from conftest import close, devices

import rudnn

DTYPES = {torch.float32: (2e-5, 2e-5), torch.float16: (4e-3, 4e-3), torch.bfloat16: (2e-2, 2e-2)}


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", DTYPES)
def test_against_torch(seed, device, dtype):
    atol, rtol = DTYPES[dtype]
    x = (torch.randn(3, 5, 257, dtype=torch.float64) * 3 + 1).to(dtype).to(device)
    gamma = torch.rand(257, dtype=torch.float32, device=device) + 0.5
    beta = torch.randn(257, dtype=torch.float32, device=device)
    x64, g64, b64 = x.double(), gamma.double(), beta.double()
    close(rudnn.normalization.layer_norm(x, gamma, beta, 1e-5), F.layer_norm(x64, (257,), g64, b64, 1e-5), atol, rtol)
    close(rudnn.normalization.layer_norm(x, gamma, None, 1e-5), F.layer_norm(x64, (257,), g64, None, 1e-5), atol,
          rtol)
    rms = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6) * g64
    close(rudnn.normalization.rms_norm(x, gamma, 1e-6), rms, atol, rtol)
    close(rudnn.normalization.softmax_last_axis(x), torch.softmax(x64, -1), atol, rtol)
    assert rudnn.normalization.rms_norm(x, gamma).dtype == dtype


def test_strided_input_is_made_contiguous(seed):
    x = torch.randn(16, 64).t()  # [64, 16], not contiguous
    gamma = torch.rand(16) + 0.5
    close(rudnn.normalization.rms_norm(x, gamma, 1e-6),
          x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6) * gamma.double(), 2e-5, 2e-5)


def test_opcheck(seed):
    x, gamma, beta = torch.randn(4, 64), torch.rand(64) + 0.5, torch.randn(64)
    torch.library.opcheck(torch.ops.rudnn.layer_norm.default, (x, gamma, beta, 1e-5))
    torch.library.opcheck(torch.ops.rudnn.layer_norm.default, (x, gamma, None, 1e-5))
    torch.library.opcheck(torch.ops.rudnn.rms_norm.default, (x, gamma, 1e-6))
    torch.library.opcheck(torch.ops.rudnn.softmax_last_axis.default, (x,))


@pytest.mark.parametrize("call, kind, argument", [
    (lambda x, g: rudnn.normalization.rms_norm(x, g, 0.0), "InvalidValue", "epsilon"),
    (lambda x, g: rudnn.normalization.rms_norm(x, g, float("nan")), "InvalidValue", "epsilon"),
    (lambda x, g: rudnn.normalization.rms_norm(x, g[:8], 1e-6), "ShapeMismatch", "gamma"),
    (lambda x, g: rudnn.normalization.rms_norm(x, g.half(), 1e-6), "UnsupportedDType", "gamma"),
    (lambda x, g: rudnn.normalization.rms_norm(x.double(), g, 1e-6), "UnsupportedDType", "input"),
    (lambda x, g: rudnn.normalization.layer_norm(x, g, g[:3], 1e-5), "ShapeMismatch", "beta"),
    # torch's dispatcher sends a call mixing devices to one backend's kernel (a CPU and a CUDA tensor:
    # the CUDA kernel); that kernel names the tensor on another device. The CPU kernel is called directly
    # here (no GPU), with a meta tensor.
    (lambda x, g: torch.ops.rudnn.rms_norm.default.redispatch(torch._C.DispatchKeySet(torch._C.DispatchKey.CPU),
                                                              x, g.to("meta"), 1e-6), "DeviceMismatch", "gamma"),
    (lambda x, g: rudnn.normalization.softmax_last_axis(x.to(torch.int32)), "UnsupportedDType", "logits"),
    # Eager torch sends a call mixing a meta tensor with CPU ones to the fake kernel, whose output would
    # be uninitialized CPU memory: it names the tensor on the other device.
    (lambda x, g: rudnn.normalization.rms_norm(x, g.to("meta"), 1e-6), "DeviceMismatch", "gamma"),
    (lambda x, g: rudnn.normalization.layer_norm(x, g, g.to("meta"), 1e-5), "DeviceMismatch", "beta"),
    (lambda x, g: rudnn.normalization.rms_norm(x.to("meta"), g, 1e-6), "DeviceMismatch", "input"),
    (lambda x, g: rudnn.normalization.rms_norm(x, torch.tensor(1.0, device="meta"), 1e-6), "DeviceMismatch", "gamma"),
])
def test_errors(call, kind, argument):
    x, gamma = torch.randn(4, 16), torch.ones(16)
    with pytest.raises(rudnn.NormalizationError) as error:
        call(x, gamma)
    assert error.value.kind == kind and error.value.argument == argument, str(error.value)
    assert isinstance(error.value, rudnn.Error) and error.value.expected and error.value.actual


@pytest.mark.parametrize("call, passed", [
    (lambda x, g: rudnn.normalization.rms_norm(x, g, 1e-50), "1e-50"),
    (lambda x, g: rudnn.normalization.layer_norm(x, g, None, 1e40), "1e+40"),
])
def test_an_epsilon_float32_cannot_hold_is_named_as_passed(call, passed):
    """A positive epsilon that rounds to 0 or overflows in float32: the error shows the caller's value."""
    with pytest.raises(rudnn.NormalizationError) as error:
        call(torch.randn(4, 16), torch.ones(16))
    assert error.value.kind == "InvalidValue" and error.value.argument == "epsilon", str(error.value)
    assert error.value.actual == passed, str(error.value)


def test_threads_share_the_library(seed):
    """Calls from several Python threads at once (the binding releases the GIL): each gets its own result."""
    import concurrent.futures

    inputs = [torch.randn(8, 128) * (i + 1) for i in range(8)]
    gamma = torch.rand(128) + 0.5
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        outputs = list(pool.map(lambda x: rudnn.normalization.rms_norm(x, gamma, 1e-6), inputs))
    for x, y in zip(inputs, outputs):
        close(y, x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6) * gamma.double(), 2e-5,
              2e-5)
