"""``precision verify`` over recorded directories (CPU): one table for every probe family."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision.probe.suite import format_rows, verify_dir
from precision.runner.cli import main
from precision.tensorcore.arch import arch_of_compute_capability as arch_of

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
    # as torch.cuda.get_device_capability() and nvidia-smi write them
    assert arch_of((8, 6)) == "sm80" and arch_of("8.9") == "sm89" and arch_of("90") == "sm90"
    for bad in ("x", (8,), True, 2.5):
        with pytest.raises(ValueError, match="expected an integer such as 86, a .major, minor"):
            arch_of(bad)


def test_packed_recordings_replay_through_the_recording_gpus_model(tmp_path):
    """A capture from another GPU is replayed with that GPU's model; an instruction the model
    lacks is reported as unmatched, never skipped."""
    import json
    import shutil

    from precision.probe import packed

    src = DATA / "sm90_mma"
    man = json.loads((src / "manifest.json").read_text())
    man["compute_capability"] = 80
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    for name in ("m8n8k4_f64_f64_f64_f64", "m16n8k16_f64_f64_f64_f64"):
        shutil.copy(src / f"{name}.npz", tmp_path)
    table = packed.verify(tmp_path)
    # sm80 has f64 m8n8k4 (the same FMA chain): every recorded output matches
    assert all(n == m > 0 for n, m in table["m8n8k4_f64_f64_f64_f64"].values())
    # ... but no m16n8k16 f64 (an sm_90 shape)
    assert table["m16n8k16_f64_f64_f64_f64"] == {"no model (sm80)": (51_200, 0)}


def test_verify_device_is_checked_and_gpu_needs_a_gpu(capsys):
    with pytest.raises(ValueError, match="device must be 'cpu' or 'gpu'"):
        verify_dir(DATA / "sm90_wgmma", device="tpu")
    from precision.gpu import unavailable_reason

    if unavailable_reason() is None:
        pytest.skip("a GPU is present: the GPU replay is tested in test_verify_dir_on_the_gpu")
    assert main(["verify", str(DATA / "sm90_wgmma"), "--device", "gpu"]) == 2
    assert "needs an NVIDIA GPU" in capsys.readouterr().err


@pytest.mark.gpu
@pytest.mark.parametrize(
    "family", ["sm90", "sm90_mma", "sm90_wmma", "sm90_wgmma", "sm90_wgmma_extra"]
)
def test_verify_dir_on_the_gpu(family):
    """Every recorded family through the GPU engine, 100 %; rows replayed by a CPU model
    instead (WMMA's exact integer and f64 models) say so in their note."""
    rows = verify_dir(DATA / family, device="gpu")
    bad = [r for r in rows if r.matches != r.outputs or r.outputs == 0]
    assert not bad, bad
    on_cpu = {r.instruction for r in rows if r.note.startswith("on the CPU: ")}
    if family == "sm90_wmma":
        from precision.probe import wmma

        engine = {"f16", "bf16", "tf32", "s8"}  # the probes replayed by mma(op="wmma")
        want = {p.name for p in wmma.PROBES if p.a not in engine}
        assert on_cpu == want and len(want) == 8  # f64, u8 x3, s4, u4, b1 x2
    else:
        assert not on_cpu


@pytest.mark.parametrize("family", ["sm90", "sm90_mma", "sm90_wmma"])
def test_verify_dir_on_the_cpu_counts_every_output_and_catches_one_flipped_bit(family, tmp_path):
    """The row builders of the mma.sync, packed mma and WMMA recordings, on the CPU: every
    recorded output is counted (the sizes of the files' ``d`` arrays) and matches; with one
    bit of one recorded output flipped, exactly one output fails to match."""
    import shutil

    import numpy as np

    recordings = sorted((DATA / family).glob("*.npz"))
    recorded = sum(int(np.load(p)["d"].size) for p in recordings)
    rows = verify_dir(DATA / family)
    assert sum(r.outputs for r in rows) == recorded
    assert all(r.matches == r.outputs > 0 for r in rows), [
        r for r in rows if r.matches != r.outputs
    ]

    copy = tmp_path / family
    shutil.copytree(DATA / family, copy)
    victim = copy / recordings[0].name
    arrays = dict(np.load(victim))
    d = arrays["d"].copy()
    d.reshape(-1)[0] ^= d.dtype.type(1)  # the last bit of the first recorded output
    arrays["d"] = d
    np.savez(victim, **arrays)
    flipped = verify_dir(copy)
    assert sum(r.outputs for r in flipped) == recorded
    assert sum(r.matches for r in flipped) == recorded - 1
