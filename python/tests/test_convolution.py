"""torch.ops.rudnn.conv_forward and its autograd against F.conv1d/2d/3d in float64."""

import pytest
import torch
import torch.nn.functional as F
from conftest import close, devices

import rudnn

TORCH_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def case(spatial, dtype, device, groups=1, requires_grad=False):
    extents = {1: (11,), 2: (7, 9), 3: (5, 4, 6)}[spatial]
    kernel = {1: (3,), 2: (3, 2), 3: (2, 3, 2)}[spatial]
    channels, outputs = 4 * groups, 3 * groups

    def make(*shape):
        return torch.randn(*shape, dtype=torch.float64).to(dtype).to(device).requires_grad_(requires_grad)

    return make(2, channels, *extents), make(outputs, channels // groups, *kernel), make(outputs)


def reference_forward(x, w, b, stride, padding, dilation, groups):
    spatial = x.dim() - 2
    return TORCH_CONV[spatial](x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("spatial", [1, 2, 3])
@pytest.mark.parametrize("dtype, strategy", [(torch.float32, "direct"), (torch.float32, "implicit_gemm"),
                                             (torch.bfloat16, "implicit_gemm")])
def test_forward_and_gradients_against_torch(seed, device, spatial, dtype, strategy):
    tol = 3e-5 if dtype == torch.float32 else 3e-2
    groups = 2 if spatial == 2 else 1
    x, w, b = case(spatial, dtype, device, groups, requires_grad=True)
    stride, padding, dilation = [2] + [1] * (spatial - 1), [1] * spatial, [1] * (spatial - 1) + [2]
    y = rudnn.convolution.conv(x, w, b, stride, padding, dilation, groups, strategy)
    x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, b))
    y64 = reference_forward(x64, w64, b64, stride, padding, dilation, groups)
    close(y, y64, tol, tol)
    grad = torch.randn(y64.shape, dtype=torch.float64)
    y.backward(grad.to(dtype).to(device))
    y64.backward(grad)
    # Each gradient sums over the output extents: the bound grows with their count.
    scale = tol * 4
    close(x.grad, x64.grad, scale, scale)
    close(w.grad, w64.grad, scale * 4, scale)
    close(b.grad, b64.grad, scale * 4, scale)
    assert x.grad.dtype == dtype and w.grad.dtype == dtype and b.grad.dtype == dtype


def test_channels_last_matches_channels_first(seed):
    x, w, b = case(2, torch.float32, "cpu")
    first = rudnn.convolution.conv_forward(x, w, b, stride=1, padding=1, strategy="direct")
    last = rudnn.convolution.conv_forward_nhwc(x.permute(0, 2, 3, 1).contiguous(), w.permute(0, 2, 3, 1).contiguous(),
                                               b, stride=1, padding=1, strategy="direct")
    close(last.permute(0, 3, 1, 2), first.double(), 1e-5, 1e-5)


def test_gradcheck_float32_against_float64_torch(seed):
    """torch.autograd.gradcheck needs float64, which rudnn does not take (test_forward_and_gradients_
    against_torch compares every gradient with torch's float64 autograd). Here the op's own backward
    is checked against a central difference of the op itself, along a random direction of each input."""
    x, w, b = case(1, torch.float32, "cpu", requires_grad=True)
    y = rudnn.convolution.conv(x, w, b, strategy="direct")
    (y * y).sum().backward()
    eps = 1e-2

    def loss(*inputs):
        return (rudnn.convolution.conv(*inputs, strategy="direct").double() ** 2).sum()

    for i, leaf in enumerate((x, w, b)):
        direction = torch.randn_like(leaf)
        plus = [t.detach() + (eps * direction if j == i else 0) for j, t in enumerate((x, w, b))]
        minus = [t.detach() - (eps * direction if j == i else 0) for j, t in enumerate((x, w, b))]
        numeric = (loss(*plus) - loss(*minus)) / (2 * eps)
        analytic = (leaf.grad.double() * direction.double()).sum()
        assert abs(numeric - analytic) <= 2e-3 * (1 + abs(analytic)), (i, numeric.item(), analytic.item())


def test_empty_batch(seed):
    x, w, b = torch.randn(0, 4, 7, 9), torch.randn(3, 4, 3, 3), torch.randn(3)
    y = rudnn.convolution.conv(x, w, b, padding=1, strategy="direct")
    assert y.shape == (0, 3, 7, 9)


def test_opcheck(seed):
    x, w, b = case(2, torch.float32, "cpu", requires_grad=True)
    options = ([1, 1], [1, 0], [1, 1], 1, "direct", False)
    torch.library.opcheck(torch.ops.rudnn.conv_forward.default, (x, w, b, *options))
    torch.library.opcheck(torch.ops.rudnn.conv_forward.default, (x, w, None, *options))
    y = torch.ops.rudnn.conv_forward.default(x.detach(), w.detach(), None, *options)
    torch.library.opcheck(torch.ops.rudnn.conv_data_backward.default, (y, w.detach(), list(x.shape), *options))
    torch.library.opcheck(torch.ops.rudnn.conv_weight_backward.default,
                          (x.detach(), y, list(w.shape), *options, True))


@pytest.mark.parametrize("change, kind, argument", [
    (dict(w=torch.randn(3, 3, 3, 3)), "ShapeMismatch", "weight"),  # C/groups ≠ 4
    (dict(groups=3), "InvalidValue", "groups"),
    (dict(b=torch.randn(5)), "ShapeMismatch", "bias"),
    (dict(w=torch.randn(3, 4, 3, 3).half()), "UnsupportedDType", "weight"),
    (dict(stride=[0, 1]), "InvalidValue", "stride"),
    (dict(w=torch.randn(3, 4, 9, 3)), "ShapeMismatch", "input"),  # output extent < 1
    (dict(strategy="winograd"), "InvalidValue", "strategy"),
    (dict(x=torch.randn(2, 4, 7, 9).to(torch.float8_e4m3fn)), "QuantizedDType", "input"),
])
def test_errors(change, kind, argument):
    args = dict(x=torch.randn(2, 4, 7, 9), w=torch.randn(3, 4, 3, 3), b=None, stride=[1, 1], groups=1,
                strategy="direct")
    args.update(change)
    with pytest.raises(rudnn.ConvSetupError) as error:
        rudnn.convolution.conv(args["x"], args["w"], args["b"], args["stride"], [0, 0], [1, 1], args["groups"],
                               args["strategy"])
    assert error.value.kind == kind and error.value.argument == argument, str(error.value)


@pytest.mark.parametrize("call, argument", [
    # Options or shapes whose output torch could not allocate: the library's error, not the allocator's.
    (lambda x, w: rudnn.convolution.conv_forward(x, w, padding=[2**21, 0]), "padding"),
    (lambda x, w: rudnn.convolution.conv_forward(x, w, padding=[2**40, 0]), "padding"),
    (lambda x, w: rudnn.convolution.conv_forward(x, w, padding=[2**62, 0]), "padding"),
    (lambda x, w: rudnn.convolution.conv_forward_nhwc(x.permute(0, 2, 3, 1), w.permute(0, 2, 3, 1),
                                                      padding=[2**21, 1]), "padding"),
    (lambda x, w: torch.ops.rudnn.conv_data_backward(torch.randn(2, 3, 5, 7), w, [2, 4, -5, 9], [1, 1], [0, 0],
                                                     [1, 1], 1, "direct", False), "input_shape"),
    (lambda x, w: torch.ops.rudnn.conv_data_backward(torch.randn(2, 3, 5, 7), w, [2, 4, 2**40, 9], [1, 1], [0, 0],
                                                     [1, 1], 1, "direct", False), "input_shape"),
    (lambda x, w: torch.ops.rudnn.conv_weight_backward(x, torch.randn(2, 3, 5, 7), [3, 4, -3, 3], [1, 1], [0, 0],
                                                       [1, 1], 1, "direct", False, True), "weight_shape"),
    (lambda x, w: torch.ops.rudnn.conv_weight_backward(x, torch.randn(2, 3, 5, 7), [2**40, 4, 3, 3], [1, 1], [0, 0],
                                                       [1, 1], 1, "direct", False, True), "weight_shape"),
    # A meta tensor among CPU ones goes to the fake kernel (uninitialized CPU output): named instead.
    (lambda x, w: rudnn.convolution.conv_forward(x, w.to("meta")), "weight"),
])
def test_errors_before_any_allocation(call, argument):
    x, w = torch.randn(2, 4, 7, 9), torch.randn(3, 4, 3, 3)
    with pytest.raises(rudnn.ConvSetupError) as error:
        call(x, w)
    assert error.value.argument == argument, str(error.value)


def test_autograd_records_history_only_when_needed(seed):
    """The C++ autograd kernel (python/src/convolution.cpp) goes straight to the kernel when nothing needs
    a gradient: no grad_fn without a requiring input or under no_grad; with one, a grad_fn and a gradient
    only for what requires it."""
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    assert rudnn.convolution.conv(x, w).grad_fn is None
    w.requires_grad_()
    with torch.no_grad():
        assert rudnn.convolution.conv(x, w).grad_fn is None
    y = rudnn.convolution.conv(x, w, padding=1)
    assert y.grad_fn is not None
    y.sum().backward()
    w64 = w.detach().double().requires_grad_()
    F.conv2d(x.double(), w64, padding=1).sum().backward()
    close(w.grad, w64.grad, 1e-4, 1e-4)
    assert x.grad is None
