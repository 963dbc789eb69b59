"""git_commit() provenance: the PRECISION_GIT_COMMIT override for copied source trees."""

from __future__ import annotations

import pytest

from precision import provenance


def test_override_replaces_the_tree_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    provenance.git_commit.cache_clear()
    monkeypatch.setenv("PRECISION_GIT_COMMIT", "  f183989abc  ")
    try:
        assert provenance.git_commit() == "f183989abc"
    finally:
        provenance.git_commit.cache_clear()


def test_without_override_the_commit_is_a_hex_hash_or_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provenance.git_commit.cache_clear()
    monkeypatch.delenv("PRECISION_GIT_COMMIT", raising=False)
    try:
        commit = provenance.git_commit()
    finally:
        provenance.git_commit.cache_clear()
    assert commit is None or all(c in "0123456789abcdef" for c in commit.removesuffix("-dirty"))
