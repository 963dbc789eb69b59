"""Provenance: the PRECISION_GIT_COMMIT override for copied source trees, and the source
digest that identifies the code without git."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from precision import provenance


def test_override_replaces_the_tree_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    provenance.git_commit.cache_clear()
    monkeypatch.setenv("PRECISION_GIT_COMMIT", "  f183989abc  ")
    try:
        assert provenance.git_commit() == "f183989abc"
    finally:
        provenance.git_commit.cache_clear()


def _git_out(*args: str) -> str | None:
    """stdout of ``git ARGS`` in the package's repository, or None if git fails."""
    try:
        res = subprocess.run(["git", *args], cwd=provenance.REPO_ROOT, capture_output=True,
                             text=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def test_without_override_the_commit_is_the_checkouts_head(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In a git work tree, git_commit() is ``git rev-parse HEAD`` (40 hex digits), with
    ``-dirty`` exactly when tracked files are modified; the override is unset."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    if _git_out("rev-parse", "--is-inside-work-tree") != "true":
        pytest.skip(f"{provenance.REPO_ROOT} is not a git work tree")
    head = _git_out("rev-parse", "HEAD")
    assert head is not None and len(head) == 40 and set(head) <= set("0123456789abcdef")
    status = lambda: _git_out("status", "--porcelain", "--untracked-files=no")  # noqa: E731
    monkeypatch.delenv("PRECISION_GIT_COMMIT", raising=False)
    provenance.git_commit.cache_clear()
    try:
        before = status()
        commit = provenance.git_commit()
        after = status()
    finally:
        provenance.git_commit.cache_clear()
    assert commit is not None
    assert commit in (head, head + "-dirty"), (commit, head)
    if before is not None and after is not None and bool(before) == bool(after):
        # (others may edit the tree meanwhile: judged only when the state held still)
        assert commit.endswith("-dirty") == bool(before), (commit, before)


def _write(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


def test_source_digest_follows_the_code_not_caches_or_other_files(tmp_path) -> None:
    _write(tmp_path, {"precision/a.py": "x = 1\n", "precision/k/b.cu": "// k\n"})
    first = provenance.source_digest(tmp_path)
    assert len(first) == provenance.DIGEST_HEX and int(first, 16) >= 0
    # caches, data and files outside the package do not count
    _write(tmp_path, {"precision/__pycache__/a.cpython-311.pyc": "junk",
                      "precision/notes.txt": "n", "tests/t.py": "y"})  # fmt: skip
    assert provenance.source_digest(tmp_path) == first
    # a one-character change to any source file does, and so does a rename
    _write(tmp_path, {"precision/k/b.cu": "// K\n"})
    changed = provenance.source_digest(tmp_path)
    assert changed != first
    (tmp_path / "precision/a.py").rename(tmp_path / "precision/c.py")
    assert provenance.source_digest(tmp_path) not in (first, changed)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_digest_of_a_commit_equals_the_digest_of_its_checkout(tmp_path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       cwd=tmp_path, check=True, capture_output=True)  # fmt: skip

    git("init", "-q")
    _write(tmp_path, {"precision/a.py": "x = 1\n", "precision/k/b.cuh": "#pragma once\n",
                      "precision/empty.py": ""})  # fmt: skip
    git("add", ".")
    git("commit", "-q", "-m", "one")
    one = provenance.source_digest(tmp_path)
    _write(tmp_path, {"precision/a.py": "x = 2\n"})
    git("commit", "-q", "-am", "two")
    two = provenance.source_digest(tmp_path)
    assert one != two
    assert provenance.source_digest_at("HEAD~1", tmp_path) == one
    assert provenance.source_digest_at("HEAD", tmp_path) == two
    with pytest.raises(ValueError, match="no-such-ref"):
        provenance.source_digest_at("no-such-ref", tmp_path)
    # from a digest back to its commits: a commit touching only files outside the package
    # has the same source digest as its parent
    _write(tmp_path, {"README.md": "docs\n"})
    git("add", ".")
    git("commit", "-q", "-m", "docs only")
    head = subprocess.run(["git", "rev-list", "HEAD"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout.split()  # fmt: skip
    assert provenance.commits_with_digest(two, tmp_path) == head[:2]
    assert provenance.commits_with_digest(one[:8], tmp_path) == head[2:]
    assert provenance.commits_with_digest("0" * 16, tmp_path) == []
    with pytest.raises(ValueError, match="at least 8 hex digits"):
        provenance.commits_with_digest("abc", tmp_path)


def test_collect_records_this_trees_digest() -> None:
    assert provenance.collect()["source_digest"] == provenance.source_digest()


def test_the_command_refuses_at_with_find_and_writes_errors_to_stderr(capsys) -> None:
    """``--at X --find D`` printed the --find result and dropped --at silently, and the errors
    went to stdout, where a script reading the digests would take them for output."""
    with pytest.raises(SystemExit) as stop:
        provenance.main(["--at", "HEAD", "--find", "0123456789abcdef"])
    assert stop.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert provenance.main(["--find", "zz"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ")
    if shutil.which("git") is None:
        return
    assert provenance.main(["--at", "no-such-ref-anywhere"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and "no-such-ref-anywhere" in err


def test_every_file_the_source_digest_hashes_is_packaged() -> None:
    """A wheel lacked probe/scripts/record_wmma_wgmma_extra.sh, so an installed package
    recorded a source_digest that no commit has: results could not be traced to their code."""
    import fnmatch
    import tomllib

    root = provenance.REPO_ROOT
    data = tomllib.loads((root / "pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["precision"]
    package = root / "precision"
    hashed = [p.relative_to(package).as_posix() for p in package.rglob("*")
              if p.suffix in provenance.SOURCE_SUFFIXES and p.suffix != ".py"
              and "__pycache__" not in p.parts]  # fmt: skip
    assert hashed, "no non-Python source file found"
    missing = [f for f in hashed if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert missing == [], f"not in [tool.setuptools.package-data]: {missing}"


def test_the_blas_numpy_runs_is_recorded_with_its_kernel_set(capsys) -> None:
    """numpy's matmul baselines depend on the BLAS library and on the CPU kernels it chose:
    both are in every row's provenance (``blas``), and `precision info` adds the versions of
    the libraries that read, write and draw the results."""
    import threadpoolctl

    from precision.runner.cli import main

    blas = [lib for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]
    recorded = provenance.collect()["blas"]
    assert blas, "numpy has loaded no BLAS?"
    assert recorded.split()[:2] == [blas[0]["internal_api"], blas[0]["version"]]
    if blas[0].get("architecture"):
        assert blas[0]["architecture"] in recorded
    assert main(["info"]) == 0
    printed = dict(line.split(maxsplit=1) for line in capsys.readouterr().out.splitlines())
    assert printed["blas"] == recorded
    for name in ("pandas", "pyarrow", "matplotlib", "seaborn", "mpmath"):
        assert printed[name][0].isdigit(), (name, printed[name])


def test_without_threadpoolctl_the_blas_numpy_was_built_with_is_recorded(monkeypatch) -> None:
    """A bare source tree on a GPU node may lack threadpoolctl: the record falls back to
    numpy's build information, marked as such, instead of failing every run."""
    import sys

    import numpy as np

    built = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # import fails
    provenance.blas_library.cache_clear()
    try:
        assert provenance.blas_library() == f"{built['name']} {built['version']} (build)"
    finally:
        provenance.blas_library.cache_clear()
