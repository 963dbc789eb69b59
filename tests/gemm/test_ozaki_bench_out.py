"""``python -m precision.gemm.ozaki_bench --out DIR`` never overwrites an earlier run."""

from __future__ import annotations

import pytest

from precision.gemm import ozaki_bench


@pytest.mark.parametrize("name", ozaki_bench.OUTPUT_FILES)
def test_refuses_a_directory_that_holds_an_earlier_run(tmp_path, capsys, name):
    earlier = tmp_path / name
    earlier.write_text("an earlier run\n")
    assert ozaki_bench.main(["--out", str(tmp_path), "--skip", "identity", "errors", "speed"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and name in err and str(tmp_path) in err
    assert earlier.read_text() == "an earlier run\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
