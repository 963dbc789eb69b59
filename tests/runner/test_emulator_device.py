"""``emulator_device = "gpu"``: the emulator backend's tensor-core steps on the GPU engine.

CPU tests: validation, which points it applies to, point identity, the refusals of
``gemm(device=...)``, the row and figure labels, and the "unavailable" row without a GPU.
GPU tests: the GPU engine gives the CPU engine's bits for every schedule, and a tiny sweep.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from doubles import fake_catalog

from precision.gemm import gemm
from precision.runner.cluster import needs_gpu
from precision.runner.config import ConfigError, parse_config
from precision.runner.execute import compute_point
from precision.runner.plotting import GPU_EMULATOR, _devices
from precision.runner.sweep import expand

BLOCKS = """\
name = "emu"
seed = 3
{device}
[[sweep]]
size = [32]
distribution = ["uniform"]
method = ["plain", "corrected", "satf"]
format = ["fp16", "tf32"]
[[sweep]]
size = [32]
distribution = ["uniform"]
method = ["plain"]
format = ["fp32"]
[[sweep]]
size = [32]
distribution = ["uniform"]
method = ["ozaki2"]
format = ["int8"]
terms = [8]
"""


def _points(device_line: str):
    return expand(parse_config(BLOCKS.format(device=device_line), "c.toml"))


def test_emulator_device_is_validated():
    with pytest.raises(ConfigError) as info:
        parse_config(BLOCKS.format(device='emulator_device = "tpu"'), "c.toml")
    msg = str(info.value)
    assert "c.toml" in msg and "emulator_device" in msg and "'tpu'" in msg and "cpu, gpu" in msg
    cfg = parse_config(BLOCKS.format(device=""), "c.toml")
    assert cfg.emulator_device == "cpu"


def test_it_applies_to_the_tensor_core_schedules_only_and_keeps_cpu_ids():
    cpu, gpu = _points(""), _points('emulator_device = "gpu"')
    assert [p.emulator_device for p in cpu] == ["cpu"] * len(cpu)
    on_gpu = {(p.method, p.format) for p in gpu if p.emulator_device == "gpu"}
    assert on_gpu == {(m, f) for m in ("plain", "corrected", "satf") for f in ("fp16", "tf32")}
    # the fp32 FMA chain and the Ozaki emulator stay on the CPU, with the ids they had
    same = {p.id for p in gpu if p.emulator_device == "cpu"}
    assert same == {p.id for p in cpu if (p.method, p.format) not in on_gpu}
    moved = [p for p in gpu if p.emulator_device == "gpu"]
    assert not {p.id for p in moved} & {p.id for p in cpu}  # timings never mix
    assert all("-emulator-gpu-" in p.slug and needs_gpu(p) for p in moved)
    assert not any(needs_gpu(p) for p in cpu)


def test_the_comparison_backend_counts_as_running_the_emulator():
    text = BLOCKS.format(device='emulator_device = "gpu"\ncompare_backend = "emulator"')
    text = text.replace('format = ["fp16", "tf32"]', 'format = ["fp16"]\nbackend = ["cuda"]')
    text = text.split('[[sweep]]\nsize = [32]\ndistribution = ["uniform"]\nmethod = ["plain"]')[0]
    points = expand(parse_config(text, "c.toml", fake_catalog()))
    assert points and all(p.backend == "cuda" and p.emulator_device == "gpu" for p in points)


def test_gemm_device_refusals_name_the_way_out():
    A = np.ones((8, 8), np.float32)
    with pytest.raises(ValueError, match="device='tpu': expected 'cpu' or 'gpu'"):
        gemm(A, A, device="tpu")
    for kwargs in (
        dict(method="plain", fmt="fp32"),  # the fp32 FMA chain
        dict(method="ozaki2", fmt="int8", target="fp64", terms=8),
        dict(method="plain", fmt="fp16", backend="cuda"),
    ):
        with pytest.raises(ValueError, match="runs with device='cpu'"):
            gemm(A.astype(np.float64), A.astype(np.float64), device="gpu", **kwargs)


def test_rows_say_where_the_emulator_ran_and_figures_label_it():
    points = [p for p in _points('emulator_device = "gpu"') if p.emulator_device == "gpu"]
    from precision.gpu import unavailable_reason

    rows = compute_point(points[0])
    assert list(rows["emulator_device"]) == ["gpu"]
    if unavailable_reason() is not None:  # no GPU here: recorded as unavailable, with why
        assert rows["status"].iloc[0] == "unavailable"
        assert "emulator_device 'gpu' is unavailable here" in rows["error"].iloc[0]
    table = pd.DataFrame(
        {"backend": ["emulator", "emulator", "cuda"], "emulator_device": ["gpu", "cpu", "cpu"]}
    )
    labels = list(_devices(table))
    assert labels[0] == GPU_EMULATOR and labels[1].startswith("CPU emulator")
    assert labels[2] == "GPU"


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["fp16", "bf16", "tf32", "e4m3", "int8"])
@pytest.mark.parametrize(
    ("method", "correction"),
    [("plain", "ootomo"), ("satf", "ootomo"), ("corrected", "ootomo"), ("corrected", "markidis")],
)
def test_gpu_engine_gives_the_cpu_engines_bits(fmt, method, correction):
    if method == "corrected" and fmt not in ("fp16", "bf16", "tf32"):
        pytest.skip("the corrected methods split into fp16, bf16 or tf32 only")
    rng = np.random.default_rng(11)
    A = (rng.standard_normal((70, 160)) * 2.0 ** rng.integers(-6, 6, (70, 160))).astype(np.float32)
    B = (rng.standard_normal((160, 45)) * 2.0 ** rng.integers(-6, 6, (160, 45))).astype(np.float32)
    kw = dict(method=method, fmt=fmt, correction=correction)
    cpu, gpu = gemm(A, B, **kw), gemm(A, B, device="gpu", **kw)
    assert cpu.dtype == gpu.dtype and np.array_equal(cpu.view(np.uint32), gpu.view(np.uint32))


@pytest.mark.gpu
def test_a_tiny_sweep_on_the_gpu_engine_equals_the_cpu_one(tmp_path):
    from precision.runner.config import parse_config as parse
    from precision.runner.runner import run_experiment

    tables = {}
    for device in ("cpu", "gpu"):
        text = BLOCKS.format(device=f'emulator_device = "{device}"').replace(
            '"emu"', f'"e{device}"'
        )
        run_experiment(parse(text, f"{device}.toml"), tmp_path, progress=False, plots=False)
        tables[device] = pd.read_parquet(tmp_path / f"e{device}" / "results.parquet")
    cpu, gpu = (
        t.sort_values(["method", "format", "correction"]).reset_index() for t in tables.values()
    )
    assert (gpu["status"] == "ok").all()
    moved = gpu["emulator_device"] == "gpu"
    assert moved.sum() == 6
    for col in ("err_fro", "err_max", "err_median"):
        assert np.array_equal(cpu[col].to_numpy(), gpu[col].to_numpy())
