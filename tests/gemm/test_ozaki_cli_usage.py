"""The Ozaki tools' command lines: usage lines show the real invocation (``python -m ...``,
not the script file's name), every option has help text stating its default, and
``ozaki_cuda_check``'s option values are checked before any work, whatever the mode."""

from __future__ import annotations

import argparse

import pytest

from precision.gemm import (
    ozaki1_cuda_check,
    ozaki_bench,
    ozaki_cuda_check,
    ozaki_plots,
    ozaki_scaling_study,
)

MODULES = [ozaki_plots, ozaki_bench, ozaki_scaling_study, ozaki_cuda_check, ozaki1_cuda_check]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_usage_shows_the_module_invocation(module, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        module.main(["--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m {module.__name__} ")


def _parser(module, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser ``module.main`` builds, taken at its ``parse_args`` (nothing runs)."""
    seen: list[argparse.ArgumentParser] = []

    def stop(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        seen.append(self)
        raise SystemExit(0)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    with pytest.raises(SystemExit):
        module.main([])
    return seen[0]


@pytest.mark.parametrize("module", [ozaki_plots, ozaki_bench, ozaki_cuda_check],
                         ids=lambda m: m.__name__.rsplit(".", 1)[1])  # fmt: skip
def test_every_option_has_help_stating_its_default(module, monkeypatch) -> None:
    for action in _parser(module, monkeypatch)._actions:
        assert action.help, action.dest
        if action.default not in (None, False, [], "", argparse.SUPPRESS):
            assert "default" in action.help, (action.dest, action.help)


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["--cpu", "--sizes", "x"], "argument --sizes: expected comma-separated positive "
      "integers, got 'x'"),
     (["--cpu", "--time-sizes", "8192,0"], "argument --time-sizes: expected comma-separated "
      "positive integers, got '8192,0'"),
     (["--cpu", "--gemm", "foo"], "argument --gemm: expected cublas, fused or cublas,fused, "
      "got 'foo'"),
     (["--sizes", "16,x"], "argument --sizes: expected comma-separated positive integers, "
      "got '16,x'")],
)  # fmt: skip
def test_cuda_check_option_values_are_checked_before_any_work(
    args: list[str], expected: str, monkeypatch, capsys: pytest.CaptureFixture
) -> None:
    # --cpu --sizes x and --cpu --gemm foo ran the CPU checks and printed ALL OK, exit 0
    def no_work() -> None:
        raise AssertionError("the checks must not run")

    monkeypatch.setattr(ozaki_cuda_check, "cpu_checks", no_work)
    with pytest.raises(SystemExit) as exc:
        ozaki_cuda_check.main(args)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[-1] == f"python -m precision.gemm.ozaki_cuda_check: error: {expected}"


def test_cuda_check_option_values_are_parsed() -> None:
    assert ozaki_cuda_check._sizes("16,100,") == [16, 100]
    assert ozaki_cuda_check._gemms("cublas,fused") == ["cublas", "fused"]
