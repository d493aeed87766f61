"""pytest setup for loom's Python package (python/tests/, run by scripts/test.sh).

The package under test is the installed one (`pip install .` puts loom and
its extension into the environment's site-packages); nothing is imported
from the source tree's python/ folder, whose loom/ lacks the built _core.
"""

import os

import pytest


def optional_module(name, why):
    """Imports `name`, or skips the test saying so. Under CI=true a module
    that scripts/setup.sh installs must be there: missing, it fails instead."""
    try:
        return __import__(name)
    except ImportError:
        if os.environ.get("CI") == "true" and name in SETUP_INSTALLS:
            pytest.fail(f"{name} is missing under CI=true, but scripts/setup.sh installs it")
        pytest.skip(f"{name} is not installed: {why}")


# The Python packages scripts/setup.sh puts into .venv (its python_packages).
SETUP_INSTALLS = {"numpy", "pytest", "nanobind", "scikit_build_core"}
