"""The kernel specs against the CUDA sources they describe, and the schedules against the specs
(no GPU: the sources are read as text)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from precision.kernels import specs

KDIR = Path(specs.__file__).parent
MMA_SRC = (KDIR / specs.MMA_SOURCE).read_text()
WG_SRC = (KDIR / specs.WGMMA_SOURCE).read_text()


def _constexpr(src: str, name: str) -> int:
    m = re.search(rf"constexpr int [^;]*\b{name} = (\d+)\b", src)
    assert m, f"constexpr int {name} not found"
    return int(m.group(1))


def _macro(src: str, name: str) -> int:
    m = re.search(rf"#define {name} (\d+)", src)
    assert m, f"#define {name} not found"
    return int(m.group(1))


def _entry_points() -> set[str]:
    """Every extern "C" kernel the two sources instantiate (through their macros)."""
    names = set(re.findall(r"^PREC_GEMM_KERNEL\((\w+),", MMA_SRC, re.M))
    names |= set(re.findall(r"^WG_(?:PLAIN|SPLIT)_KERNEL\((\w+),", WG_SRC, re.M))
    for suffix in re.findall(r"^WG_ROUND_KERNEL\((\w+),", WG_SRC, re.M):
        names.add(f"wg_round_operands_{suffix}")
    return names


def test_every_entry_point_has_a_spec_and_every_spec_an_entry_point() -> None:
    assert set(specs.KERNELS) == _entry_points()


def test_mma_sync_geometry_mirrors_gemm_mma_cu() -> None:
    bm, bn, bk = specs.MMA_TILE
    assert (_constexpr(MMA_SRC, "BM"), _constexpr(MMA_SRC, "BN"), _constexpr(MMA_SRC, "BK")) == (
        bm,
        bn,
        bk,
    )
    assert _constexpr(MMA_SRC, "STAGES") == specs.MMA_STAGES
    assert _constexpr(MMA_SRC, "NTHREADS") == specs.MMA_THREADS
    assert _constexpr(MMA_SRC, "CVT_STAGES") == specs.MMA_CVT_STAGES
    # the register path's shared memory: STAGES x (A [BM][LDA] + B [BK][LDB]) floats
    lda, ldb = bk + 4, bn + 8
    assert re.search(r"LDA = BK \+ 4;", MMA_SRC) and re.search(r"LDB = BN \+ 8;", MMA_SRC)
    assert specs.kernel_spec("gemm_plain_e4m3").smem_bytes == 3 * (bm * lda + bk * ldb) * 4


def test_wgmma_geometry_mirrors_gemm_wgmma_cu() -> None:
    assert _constexpr(WG_SRC, "NTHREADS") == specs.WG_PLAIN_THREADS
    assert _constexpr(WG_SRC, "PLAIN_ROW") == specs.WG_PLAIN_ROW
    assert _constexpr(WG_SRC, "PLAIN_STAGES") == specs.WG_PLAIN_STAGES
    assert _constexpr(WG_SRC, "SPLIT_ROW") == specs.WG_SPLIT_ROW
    assert _constexpr(WG_SRC, "PRODUCERS") + 256 == specs.WG_SPLIT_THREADS
    for fmt in specs.WGMMA_FORMATS:
        bm, bn, _ = specs.kernel_spec(f"wg_plain_{fmt}").gemm_tile
        assert (bm, bn) == (_constexpr(WG_SRC, "BM"), _constexpr(WG_SRC, "PLAIN_BN"))
        bm, bn, _ = specs.kernel_spec(f"wg_ootomo_{fmt}").gemm_tile
        assert (bm, bn) == (_constexpr(WG_SRC, "BM"), _constexpr(WG_SRC, "SPLIT_BN"))
    assert specs.WG_SPLIT_TBLOCK["tf32"] == _macro(WG_SRC, "WG_SPLIT_TBLOCK32")
    assert specs.WG_SPLIT_TBLOCK["f16"] == specs.WG_SPLIT_TBLOCK["bf16"]
    assert specs.WG_SPLIT_TBLOCK["f16"] == _macro(WG_SRC, "WG_SPLIT_TBLOCK16")


@pytest.mark.parametrize("name", sorted(specs.KERNELS))
def test_spec_defines_are_the_source_defaults(name: str) -> None:
    spec = specs.kernel_spec(name)
    src = (KDIR / spec.source).read_text()
    for macro, value in spec.defines:
        assert _macro(src, macro) == value, (name, macro)


def test_schedules_take_tile_and_source_from_the_specs() -> None:
    from precision.gemm import all_schedules

    for s in all_schedules():
        spec = specs.kernel_spec(s.kernel)
        assert s.tile == spec.gemm_tile, s.kernel
        assert s.source == spec.source, s.kernel
        if s.strict_kernel:
            strict_tile = specs.kernel_spec(s.strict_kernel).gemm_tile
            assert strict_tile == specs.MMA_TILE
            # launch.py queues the strict kernel over the satf kernel's unpadded operands and
            # output, so every padded shape of the one must be whole tiles of the other
            assert all(t % u == 0 for t, u in zip(s.tile, strict_tile, strict=True)), s.kernel


def test_unknown_kernel_and_tile_of_a_rounding_kernel_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown GEMM kernel 'wg_plain_fp16'"):
        specs.kernel_spec("wg_plain_fp16")
    with pytest.raises(ValueError, match="not a GEMM kernel"):
        _ = specs.kernel_spec("wg_round_operands_f16").gemm_tile


def test_kernels_import_nothing_of_gemm() -> None:
    """The layering: precision.gemm imports precision.kernels, never the reverse."""
    for path in KDIR.glob("*.py"):
        text = path.read_text()
        assert not re.search(r"^\s*(from|import) precision\.gemm", text, re.M), path.name
