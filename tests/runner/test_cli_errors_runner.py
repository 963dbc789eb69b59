"""``precision`` sub-commands on bad input: a one-line error naming the option and what was
expected, exit status 2, no traceback, checked before any work is done; GPU-less machines get
one form of message; unknown options are reported by the sub-command's own parser; ``--help``
is plain text with the defaults."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
import pytest

import precision.gpu
from precision.runner.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
NO_GPU = "CuPy is not importable (test double); install precision[gpu]"


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    return lines[0]


def _usage_error(capsys, argv: list[str]) -> str:
    """stderr of an argparse refusal (exit status 2)."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    return err


@pytest.fixture
def no_gpu(monkeypatch):
    """This machine as one without a usable GPU, whatever it has."""
    monkeypatch.setattr(precision.gpu, "unavailable_reason", lambda: NO_GPU)
    monkeypatch.setattr(precision.gpu, "cupy_or_none", lambda: None)


# -- defect 2: bench sizes, repeats and format names -------------------------------------------


def test_bench_size_not_a_multiple_of_k_is_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--cpu-n", "100", "--exact-n", "0"]) == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert "--cpu-n 100" in line and "f16/bf16/f16acc (16)" in line and "b1 (256)" in line
    assert "multiple of 256" in line
    assert out == "" and not (tmp_path / "results").exists()


def test_bench_size_message_names_only_the_formats_it_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--formats", "tf32", "f16", "--cpu-n", "1000", "--exact-n", "0"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "f16 (16)" in line and "tf32" not in line.split(";")[0]
    assert "992 or 1008" in line


@pytest.mark.parametrize(
    ("argv", "option", "value", "expected"),
    [
        (["--cpu-n", "-5"], "--cpu-n", "-5", ">= 1"),
        (["--cpu-n", "0"], "--cpu-n", "0", ">= 1"),
        (["--gpu-n", "x"], "--gpu-n", "x", "an integer"),
        (["--exact-n", "-1"], "--exact-n", "-1", ">= 0"),
        (["--repeats", "0", "--quick"], "--repeats", "0", ">= 1"),
        (["--verify-stride", "0"], "--verify-stride", "0", ">= 1"),
        (["--seed", "-1"], "--seed", "-1", ">= 0"),
    ],
)
def test_bench_refuses_bad_numbers_in_argparse(capsys, argv, option, value, expected):
    err = _usage_error(capsys, ["bench", *argv])
    assert err.startswith("usage: precision bench")
    last = err.strip().splitlines()[-1]
    assert f"argument {option}" in last and repr(value) in last and expected in last


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--repeats", "0"], "--repeats"),
        (["--sizes", "1024", "0"], "--sizes"),
        (["--warmup", "-1"], "--warmup"),
        (["--seed", "-3"], "--seed"),
    ],
)
def test_bench_gemm_refuses_bad_numbers_in_argparse(capsys, argv, option):
    err = _usage_error(capsys, ["bench-gemm", *argv])
    assert err.startswith("usage: precision bench-gemm")
    assert f"argument {option}" in err.strip().splitlines()[-1]


@pytest.mark.parametrize("value", ["-5", "nan", "soon"])
def test_run_refuses_a_wait_that_is_no_number_of_seconds(tmp_path, monkeypatch, capsys, value):
    # a negative --wait was taken as 0 without a word
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "cfg.toml"
    config.write_text(
        'name = "w"\n[sweep]\nsize = [16]\ndistribution = ["uniform"]\nmethod = ["plain"]\n'
        'format = ["fp16"]\n'
    )
    err = _usage_error(capsys, ["run", str(config), "--no-plots", "--quiet", "--wait", value])
    assert err.startswith("usage: precision run")
    last = err.strip().splitlines()[-1]
    assert "argument --wait: expected a number of seconds" in last and repr(value) in last
    assert list(tmp_path.iterdir()) == [config]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--gpu-n", "100"], "--gpu-n needs --device gpu"),
        (["--verify-stride", "3"], "--verify-stride needs --verify-n"),
        (["--verify-formats", "b1"], "--verify-formats needs --verify-n"),
    ],
)
def test_bench_options_of_a_measurement_not_asked_for_are_refused(extra, says, tmp_path, capsys):
    """They were accepted and ignored (--gpu-n 100, not even a multiple of k, on the CPU)."""
    argv = ["bench", "--formats", "f16", "--cpu-n", "16", "--exact-n", "0", *extra]
    assert main([*argv, "--out", str(tmp_path / "b.csv")]) == 2
    assert says in _one_error_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


def test_bench_formats_take_any_alias_of_the_operand_format():
    args = build_parser().parse_args(
        ["bench", "--formats", "fp16", "half", "f16acc", "bfloat16", "u8", "s4", "fp64"]
    )
    assert args.formats == ["f16", "f16", "f16acc", "bf16", "u8", "s4", "f64"]
    args = build_parser().parse_args(["bench", "--verify-formats", "float16", "e4m3fn", "uint1"])
    assert args.verify_formats == ["f16", "e4m3", "b1"]


def test_bench_format_refusal_keeps_the_list_of_choices(capsys):
    err = _usage_error(capsys, ["bench", "--formats", "fp17"])
    last = err.strip().splitlines()[-1]
    assert "argument --formats: invalid choice: 'fp17'" in last
    assert "'f16', 'bf16', 'tf32'" in last and "'f64'" in last


def test_bench_with_an_alias_runs_and_writes_the_canonical_name(tmp_path, capsys):
    out = tmp_path / "bench.csv"
    argv = ["bench", "--formats", "fp16", "--cpu-n", "16", "--exact-n", "0", "--repeats", "1"]
    assert main([*argv, "--out", str(out)]) == 0
    assert list(pd.read_csv(out)["format"]) == ["f16"]


def test_bench_measures_a_case_named_twice_once(tmp_path, capsys):
    out = tmp_path / "bench.csv"
    argv = ["bench", "--formats", "fp16", "half", "--device", "cpu", "cpu", "--cpu-n", "16"]
    assert main([*argv, "--exact-n", "0", "--repeats", "1", "--out", str(out)]) == 0
    assert list(pd.read_csv(out)["format"]) == ["f16"]


def test_bench_verify_n_without_the_gpu_device_is_refused_not_ignored(tmp_path, capsys):
    # --verify-n checks the GPU engine: on the CPU device alone it used to be dropped without
    # a word, after a CPU bench the user had not asked for
    out = tmp_path / "bench.csv"
    argv = ["bench", "--verify-n", "64", "--formats", "f16", "--cpu-n", "16", "--exact-n", "0"]
    assert main([*argv, "--repeats", "1", "--out", str(out)]) == 2
    stdout, err = capsys.readouterr()
    line = _one_error_line(err)
    assert "--verify-n 64" in line and "--device gpu" in line
    assert stdout == "" and not out.exists()


def test_bench_out_that_cannot_be_written_is_refused_before_the_work(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    out = blocker / "bench.csv"
    argv = ["bench", "--formats", "f16", "--cpu-n", "16", "--exact-n", "16", "--repeats", "1"]
    assert main([*argv, "--out", str(out)]) == 2
    stdout, err = capsys.readouterr()
    assert f"--out {out}" in _one_error_line(err)
    assert "emulator" not in stdout


# -- defect 3: verify --json destination ------------------------------------------------------


def test_verify_json_that_cannot_be_written_is_refused_before_the_replay(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    dest = blocker / "x.json"
    assert main(["verify", str(DATA / "sm90_wgmma"), "--json", str(dest)]) == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert f"--json {dest}" in line and "cannot write" in line
    assert out == ""  # no replay ran


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_verify_json_under_proc_is_one_line(capsys):
    assert main(["verify", str(DATA / "sm90"), "--json", "/proc/x.json"]) == 2
    out, err = capsys.readouterr()
    assert "--json /proc/x.json" in _one_error_line(err) and out == ""


def test_verify_json_is_a_directory_is_refused(tmp_path, capsys):
    assert main(["verify", str(DATA / "sm90_wgmma"), "--json", str(tmp_path)]) == 2
    assert "is a directory" in _one_error_line(capsys.readouterr().err)


def test_verify_json_is_written_whole_and_leaves_no_temporary_file(tmp_path, capsys):
    dest = tmp_path / "sub" / "table.json"
    assert main(["verify", str(DATA / "sm90_wgmma"), "--json", str(dest)]) == 0
    table = json.loads(dest.read_text())
    assert table["device"] == "cpu" and len(table["rows"]) > 0
    assert [p.name for p in dest.parent.iterdir()] == ["table.json"]
    assert "total" in capsys.readouterr().out


def test_verify_of_a_recording_refuses_a_seed_it_would_ignore(capsys):
    assert main(["verify", str(DATA / "sm90_wgmma"), "--seed", "5"]) == 2
    assert "--seed applies to a fresh capture (no PATH)" in _one_error_line(capsys.readouterr().err)


def test_a_refused_verify_leaves_no_directory_made_for_its_json(tmp_path, capsys):
    """The --json check made newd/sub/ before the missing PATH was refused; it stayed."""
    dest = tmp_path / "newd" / "sub" / "o.json"
    assert main(["verify", str(tmp_path / "nonexist"), "--json", str(dest)]) == 2
    assert "nonexist" in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "newd").exists()


# -- defect 5: what verify expects -------------------------------------------------------------


def test_verify_of_a_file_that_is_no_recording_says_what_verify_expects(capsys):
    assert main(["verify", str(ROOT / "README.md")]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "README.md" in line and "expected a recording directory" in line
    assert "unknown probe" not in line and "bf16_f32" not in line


def test_verify_of_an_empty_directory_says_what_verify_expects(tmp_path, capsys):
    assert main(["verify", str(tmp_path)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "no recordings" in line and "precision capture" in line


@pytest.mark.parametrize(
    ("path", "family"),
    [
        ("sm90_mma/m16n8k16_f32_f16_f16_f32.npz", "mma"),
        ("sm90/bf16_f32.npz", "mma_sync"),
        ("sm90_wgmma/wgmma_f16_f32.npz", "wgmma"),
        ("sm90_wgmma_extra/wgmma_s8_s32.npz", "wgmma_extra"),
        ("sm90_wmma/f16_f32_m16n16k16.npz", "wmma"),
    ],
)
def test_verify_one_file_of_a_family_directory(path, family, capsys):
    assert main(["verify", str(DATA / path)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()[1:-1]]
    assert rows and {r[0] for r in rows} == {family}
    assert {r[1] for r in rows} == {Path(path).stem.removeprefix("wgmma_")}
    assert out.splitlines()[-1].split()[-1] == "100.000"


def test_verify_a_file_unknown_to_its_family_directory(tmp_path, capsys):
    family = tmp_path / "wmma"
    family.mkdir()
    (family / "manifest.json").write_text((DATA / "sm90_wmma" / "manifest.json").read_text())
    stray = family / "not_a_probe.npz"
    stray.write_bytes((DATA / "sm90_wmma" / "f16_f32_m16n16k16.npz").read_bytes())
    assert main(["verify", str(stray)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "not_a_probe.npz" in line and "wmma family" in line


# -- defect 6: one form of the no-GPU message --------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["bench", "--device", "gpu", "--quick"], "precision bench --device gpu"),
        (["verify", str(DATA / "sm90"), "--device", "gpu"], "precision verify --device gpu"),
        (["verify"], "precision verify without PATH (a fresh capture)"),
        (["capture"], "precision capture"),
        (["bench-gemm"], "precision bench-gemm"),
    ],
    ids=["bench", "verify-gpu", "verify-capture", "capture", "bench-gemm"],
)
def test_no_gpu_messages_have_one_form(no_gpu, tmp_path, monkeypatch, capsys, argv, what):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert line.startswith(f"error: {what} needs an NVIDIA GPU with CuPy, but {NO_GPU}")
    assert "mma(device=" not in line
    assert out == "" and list(tmp_path.iterdir()) == []


def test_tune_split_without_a_gpu_is_one_line_not_a_traceback(no_gpu, capsys):
    from precision.runner import tune_split

    assert tune_split.main([]) == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert line.startswith(
        f"error: python -m precision.runner.tune_split needs an NVIDIA GPU with CuPy, but {NO_GPU}"
    )
    assert out == ""


# -- defect 7: unknown options reported by the sub-command -------------------------------------


def test_unknown_option_is_reported_by_the_subcommand_with_a_suggestion(capsys):
    err = _usage_error(capsys, ["run", str(ROOT / "configs" / "quickstart.toml"), "--froce"])
    assert err.startswith("usage: precision run ")
    last = err.strip().splitlines()[-1]
    assert last.startswith("precision run: error: unrecognized arguments: --froce")
    assert "did you mean --force?" in last


def test_unknown_argument_without_a_close_option(capsys):
    err = _usage_error(capsys, ["list", "extra"])
    assert err.startswith("usage: precision list")
    assert err.strip().splitlines()[-1] == "precision list: error: unrecognized arguments: extra"


def test_unknown_option_before_any_command_is_the_top_level_parser(capsys):
    err = _usage_error(capsys, ["--froce"])
    assert err.startswith("usage: precision [-h]")


def test_unknown_option_before_the_command_is_the_top_level_parsers(capsys):
    # `precision --froce run ...`: --force belongs to `run`, not before it, so the top-level
    # parser reports it and does not suggest --force.
    err = _usage_error(capsys, ["--froce", "run", "configs/quickstart.toml"])
    assert err.startswith("usage: precision [-h]") and "unrecognized arguments: --froce" in err
    assert "--force" not in err


# -- defect 8: plain-text help with defaults ---------------------------------------------------


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("bench", ["--device", "--formats", "--gpu-n", "--seed", "--repeats", "--cpu-n"]),
        ("bench-gemm", ["--sizes", "--repeats", "--warmup", "--seed", "--max-n-exp", "--phi"]),
    ],
)
def test_help_is_plain_text_and_shows_defaults(command, options, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for markup in ("``", ":func:", ":mod:", ":data:"):
        assert markup not in text, markup
    by_option = {o: a for a in _subparser(command)._actions for o in a.option_strings}
    for option in options:
        assert by_option[option].help and "default" in by_option[option].help, option
    assert "(default: 8192)" in " ".join(text.split()) or command != "bench"


def test_a_mistyped_command_gets_the_closest_one(capsys):
    err = _usage_error(capsys, ["runn", "configs/quickstart.toml"])
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(
            "precision: error: unknown command 'runn'; did you mean 'run'? (commands: run, plot,"
        )
    )
    err = _usage_error(capsys, ["xyz"])  # nothing close: argparse's own list
    assert "invalid choice: 'xyz'" in err and "did you mean" not in err
