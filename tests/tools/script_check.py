"""What the tests of scripts/ tools share: the script loaded as a module (the scripts have no .py
suffix, so no import finds them), and checks that collect failures and report them at the end."""
import importlib.machinery
import importlib.util
import sys


def load_script(path, name):
    loader = importlib.machinery.SourceFileLoader(name, path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: expected {want!r}, got {got!r}")


def finish(tool):
    """Prints the failures and '<tool> parse: ok' (what CTest's pass pattern looks for), and exits."""
    for f in failures:
        print("FAIL:", f)
    print(f"{tool} parse: " + ("ok" if not failures else f"{len(failures)} failures"))
    sys.exit(1 if failures else 0)
