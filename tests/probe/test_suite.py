"""``precision verify`` over recorded directories (CPU): one table for every probe family."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision.probe.suite import arch_of, format_rows, verify_dir
from precision.runner.cli import main

DATA = Path(__file__).parents[1] / "data"


def test_verify_dir_reads_every_family_it_finds():
    rows = verify_dir(DATA / "sm90_wgmma_extra") + verify_dir(DATA / "sm90_wgmma")
    families = {r.family for r in rows}
    assert families == {"wgmma", "wgmma_extra"}
    assert all(r.matches == r.outputs > 0 for r in rows), [
        r for r in rows if r.matches != r.outputs
    ]
    assert format_rows(rows).splitlines()[-1].split()[-1] == "100.000"


def test_cli_verify_exit_status(capsys):
    assert main(["verify", str(DATA / "sm90_wgmma_extra")]) == 0
    out = capsys.readouterr().out
    assert "wgmma_extra" in out and "e4m3e5m2_f32" in out
    assert main(["verify", str(DATA / "no_such_dir")]) == 2
    assert "no such recording directory" in capsys.readouterr().err


def test_directory_without_recordings_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no recordings"):
        verify_dir(tmp_path)


def test_arch_of_compute_capability():
    assert arch_of(90) == "sm90" and arch_of(86) == "sm80" and arch_of(89) == "sm89"
    with pytest.raises(ValueError, match="no model"):
        arch_of(61)
