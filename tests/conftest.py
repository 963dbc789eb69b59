"""Shared pytest configuration: the ``gpu`` marker skips cleanly without CuPy or a GPU."""

from __future__ import annotations

import pytest

from precision.gpu import unavailable_reason


def pytest_collection_modifyitems(config, items):
    reason = unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs CuPy and an NVIDIA GPU ({reason})")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
