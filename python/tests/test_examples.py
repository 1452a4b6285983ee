"""The PyTorch examples (examples/python/, run by scripts/demo) agree with their plain-PyTorch
counterparts: every difference they print is within the dtype's rounding."""

import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def differences(script, *args):
    result = subprocess.run([sys.executable, str(EXAMPLES / script), "--device", "cpu", *args], capture_output=True,
                            text=True, check=True)
    values = [float(v) for v in re.findall(r"max \|rudnn − torch\| = ([0-9.e+-]+)", result.stdout)]
    assert values, result.stdout
    return values


@pytest.mark.parametrize("dtype, bound", [("float32", 1e-5), ("bfloat16", 0.1)])
def test_llama_block(dtype, bound):
    assert max(differences("llama_block.py", "--dtype", dtype)) <= bound


@pytest.mark.parametrize("dtype, bound", [("float32", 1e-5), ("bfloat16", 0.1)])
def test_deepseek_moe(dtype, bound):
    assert max(differences("deepseek_moe.py", "--dtype", dtype)) <= bound
