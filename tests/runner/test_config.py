"""Config parsing and validation: the issue's minimal form, and one clear error per mistake."""

from __future__ import annotations

import pytest
from doubles import fake_catalog

from precision.runner.config import ConfigError, parse_config
from precision.runner.sweep import expand, number_label

MINIMAL = """\
name = "my-sweep"          # results go to results/my-sweep/
seed = 0
repeats = 1
reference = "exact"        # or "fp64"
[sweep]                    # cartesian product of the lists
size = [64, 128]           # square m = n = k; `m`, `n`, `k` lists may be given instead
distribution = ["uniform", "normal", "exp_rand"]
method = ["plain", "corrected", "satf"]
format = ["f16", "bf16", "tf32"]
backend = ["emulator"]
[distribution.exp_rand]
phi = 1.0
"""


def parse(text: str):
    return parse_config(text, "cfg.toml", catalog=fake_catalog())


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse(text)
    message = str(info.value)
    assert "cfg.toml" in message
    assert "\n" not in message
    return message


def test_minimal_form_from_the_issue():
    cfg = parse(MINIMAL)
    assert (cfg.name, cfg.seed, cfg.repeats, cfg.reference) == ("my-sweep", 0, 1, "exact")
    assert cfg.text == MINIMAL
    (sw,) = cfg.sweeps
    assert sw.shapes == ((64, 64, 64), (128, 128, 128))
    assert sw.formats == ("fp16", "bf16", "tf32")  # aliases canonicalised
    assert cfg.dist_params == {"exp_rand": {"phi": 1.0}}
    points = expand(cfg)
    assert len(points) == 2 * 3 * 3 * 3
    assert len({p.id for p in points}) == len(points)
    # correction only applies to the corrected method (default ootomo, per the gemm contract)
    assert {p.correction for p in points if p.method == "corrected"} == {"ootomo"}
    assert {p.correction for p in points if p.method != "corrected"} == {None}
    assert {dict(p.dist_params)["phi"] for p in points if p.distribution == "exp_rand"} == {1.0}


def test_typo_in_sweep_names_the_key_and_suggests():
    message = error_of(MINIMAL.replace("size = [64, 128]", "sise = [64]"))
    assert "'sise'" in message and "did you mean 'size'" in message and "[sweep]" in message


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("seed = 0", "seeed = 0", "did you mean 'seed'"),
        (
            "seed = 0",
            'seed = "zero"',
            "seed: expected an integer in [0, 9223372036854775807], got str 'zero'",
        ),
        # (2^64 passed, and the run crashed writing its first point: the column is int64)
        (
            "seed = 0",
            "seed = 18446744073709551616",
            "seed: expected an integer in [0, 9223372036854775807], got 18446744073709551616",
        ),
        ("repeats = 1", "repeats = 0", "repeats: expected an integer >= 1, got 0"),
        ('reference = "exact"', 'reference = "exakt"', "did you mean 'exact'"),
        ('"satf"]', '"satff"]', "unknown method 'satff'; did you mean 'satf'"),
        ('"tf32"]', '"tf33"]', "unknown format 'tf33'"),
        ('backend = ["emulator"]', 'backend = ["emulater"]', "did you mean 'emulator'"),
        ('"exp_rand"]', '"exp-rand"]', "did you mean 'exp_rand'"),
        (
            "phi = 1.0",
            "phii = 1.0",
            "[distribution.exp_rand]: unknown key 'phii'; did you mean 'phi'",
        ),
        ("phi = 1.0", 'phi = "big"', "must be a number"),
        ("phi = 1.0", "phi = -1.0", "phi >= 0"),
        ("phi = 1.0", "phi = []", "non-empty list"),
        ("[distribution.exp_rand]", "[distribution.exp_rnd]", "did you mean 'exp_rand'"),
        ("size = [64, 128]", "size = [64, 0]", "[sweep] size: expected an integer >= 1"),
        ("size = [64, 128]", "size = []", "non-empty list"),
        ("size = [64, 128]", "size = [64]\nm = [3]", "either 'size'"),
        ("size = [64, 128]", "m = [3]\nn = [4]", "[sweep] k: missing"),
        ("size = [64, 128]", "", "[sweep] size: missing"),
        ('method = ["plain", "corrected", "satf"]\n', "", "[sweep] method: missing"),
        ('name = "my-sweep"', 'name = "../escape"', "name: expected letters"),
        ('name = "my-sweep"', "", "name: missing"),
        (
            "phi = 1.0\n",
            "phi = 1.0\n[timing]\nwarmup = -1\n",
            "[timing] warmup: expected an integer >= 0",
        ),
        ("phi = 1.0\n", "phi = 1.0\n[timing]\ncals = 3\n", "did you mean 'calls'"),
        ("seed = 0", 'seed = 0\ncompare_backend = "gpu"', "compare_backend: unknown backend"),
        ("seed = 0", "seed = 0 = 1", "not valid TOML"),
        # a top-level key written below a table header belongs to that table in TOML
        (
            'backend = ["emulator"]\n',
            'backend = ["emulator"]\nseed = 3\n',
            "[sweep]: unknown key 'seed'; 'seed' is a top-level key, but TOML puts every key "
            "after a [sweep] header into that table: move it above the first [table] header",
        ),
        ("phi = 1.0\n", "phi = 1.0\nrepeats = 3\n", "after a [distribution.exp_rand] header"),
    ],
)
def test_each_mistake_gives_one_precise_message(old, new, expected):
    assert old in MINIMAL
    message = error_of(MINIMAL.replace(old, new, 1))
    assert expected in message, message


def test_mnk_lists_give_their_cartesian_product():
    text = MINIMAL.replace("size = [64, 128]", "m = [16, 32]\nn = [8]\nk = [64, 128]")
    (sw,) = parse(text).sweeps
    assert set(sw.shapes) == {(m, 8, k) for m in (16, 32) for k in (64, 128)}


def test_sweep_array_of_tables_is_a_union_and_deduplicated():
    text = """
name = "u"
[[sweep]]
size = [16]
distribution = ["uniform"]
method = ["plain", "corrected"]
format = ["fp16"]
correction = ["markidis", "ootomo"]
[[sweep]]
size = [16]
distribution = ["uniform"]
method = ["plain"]
format = ["fp32", "fp16"]
backend = ["cublas"]
"""
    points = expand(parse(text))
    keys = {(p.method, p.correction, p.format, p.backend) for p in points}
    assert keys == {
        ("plain", None, "fp16", "emulator"),
        ("corrected", "markidis", "fp16", "emulator"),
        ("corrected", "ootomo", "fp16", "emulator"),
        ("plain", None, "fp32", "cublas"),
        ("plain", None, "fp16", "cublas"),
    }
    message = error_of(text.replace("backend", "backnd"))
    assert "[[sweep]] #2" in message and "did you mean 'backend'" in message


def test_list_valued_distribution_parameters_are_swept():
    cfg = parse(MINIMAL.replace("phi = 1.0", "phi = [0.0, 0.5, 1.5]"))
    points = [p for p in expand(cfg) if p.distribution == "exp_rand"]
    assert {dict(p.dist_params)["phi"] for p in points} == {0.0, 0.5, 1.5}
    assert {p.dist_label(("phi",)) for p in points} == {
        "exp_rand(phi=0)",
        "exp_rand(phi=0.5)",
        "exp_rand(phi=1.5)",
    }


def test_parameters_that_agree_to_six_digits_keep_distinct_labels():
    """``{:g}`` wrote phi = 1.0 and 1.0000001 both as ``phi=1`` (mean = 1e6 and 1000001 both
    as ``1e+06``): the figures and summary tables, which name a series by its label, pooled
    the two points. Values that ``:g`` keeps exactly read as before."""
    cfg = parse(MINIMAL.replace("phi = 1.0", "phi = [1.0, 1.0000001, 0.5]"))
    points = [p for p in expand(cfg) if p.distribution == "exp_rand"]
    assert {p.dist_label(("phi",)) for p in points} == {
        "exp_rand(phi=1)",
        "exp_rand(phi=1.0000001)",
        "exp_rand(phi=0.5)",
    }
    assert number_label(1e6) == "1e+06" and number_label(1000001.0) == "1000001.0"


def test_point_ids_and_input_seeds_do_not_depend_on_list_order():
    a = expand(parse(MINIMAL))
    b = expand(
        parse(
            MINIMAL.replace(
                '["uniform", "normal", "exp_rand"]', '["exp_rand", "uniform", "normal"]'
            ).replace("[64, 128]", "[128, 64]")
        )
    )
    assert [p.id for p in a] == [p.id for p in b]
    assert [p.input_seed(1) for p in a] == [p.input_seed(1) for p in b]


def test_input_seed_depends_on_inputs_only():
    points = expand(parse(MINIMAL))
    by_inputs: dict[tuple, set[int]] = {}
    for p in points:
        by_inputs.setdefault(p.input_key(), set()).add(p.input_seed(0))
    assert all(len(seeds) == 1 for seeds in by_inputs.values())
    assert len({next(iter(s)) for s in by_inputs.values()}) == len(by_inputs)
    p = points[0]
    assert p.input_seed(0) != p.input_seed(1)
    other = expand(parse(MINIMAL.replace("seed = 0", "seed = 1")))[0]
    assert other.input_seed(0) != p.input_seed(0)


def test_explicit_default_parameter_gives_the_same_inputs():
    with_phi = expand(parse(MINIMAL))
    without = expand(parse(MINIMAL.replace("[distribution.exp_rand]\nphi = 1.0\n", "")))
    assert [p.id for p in with_phi] == [p.id for p in without]


INVALID_BLOCKS = [
    ('method = ["corrected"]\nformat = ["e4m3"]', "does not support format 'e4m3'"),
    ('method = ["corrected"]\nformat = ["int8"]', "does not support format 'int8'"),
    # fp32 on the emulator is the plain FMA-chain baseline only
    ('method = ["satf"]\nformat = ["fp32"]', "backend 'emulator' does not support format 'fp32'"),
    ('method = ["plain"]\nformat = ["fp64"]', "backend 'emulator' does not support format 'fp64'"),
    ('method = ["plain"]\nformat = ["e4m3"]\narch = ["sm70"]', "arch 'sm70' has no tensor-core"),
    ('method = ["plain"]\nformat = ["fp16"]\nbackend = ["cuda"]\narch = ["sm80"]', "sm90 only"),
    ('method = ["satf"]\nformat = ["fp16"]\nbackend = ["cublas"]', "does not run on backend"),
    (
        'method = ["corrected"]\nformat = ["fp16"]\nbackend = ["cublas"]\n'
        'correction = ["markidis"]',
        "does not support correction 'markidis'",
    ),
]


@pytest.mark.parametrize(("block", "expected"), INVALID_BLOCKS)
def test_invalid_combinations_are_refused_at_validation(block, expected):
    text = f'name = "x"\n[sweep]\nsize = [8]\ndistribution = ["uniform"]\n{block}\n'
    with pytest.raises(ConfigError, match=expected) as info:
        parse_config(text, "c.toml", fake_catalog())
    assert "config error in c.toml: [sweep]:" in str(info.value)
    assert "precision list" in str(info.value)


def test_valid_combinations_split_into_sweep_tables_pass():
    text = """\
name = "x"
[[sweep]]
size = [8]
distribution = ["uniform"]
method = ["plain", "corrected"]
format = ["fp16", "tf32"]
[[sweep]]
size = [8]
distribution = ["uniform"]
method = ["plain"]
format = ["fp32"]
backend = ["cublas"]
"""
    assert len(expand(parse_config(text, "c.toml", fake_catalog()))) == 5
    bad = text.replace('name = "x"', 'name = "x"\ncompare_backend = "cublas"')
    with pytest.raises(ConfigError, match="compare_backend: method 'corrected' on backend"):
        parse_config(bad, "c.toml", fake_catalog())


def dist_config(table: str, extra: str = "") -> str:
    """A config sweeping the distribution of ``table`` (``[distribution.NAME]`` and its keys)."""
    name = table.split("]")[0].removeprefix("[distribution.")
    return (
        f'name = "d"\n{extra}\n[sweep]\nsize = [8]\ndistribution = ["{name}"]\n'
        f'method = ["plain"]\nformat = ["fp16"]\n{table}\n'
    )


@pytest.mark.parametrize(
    "table",
    [
        "[distribution.uniform]\nlow = 2.0\nhigh = 3.0",
        "[distribution.uniform]\nlow = -3.0\nhigh = -2.0",
        "[distribution.uniform]\nlow = [-3.0, 1.5]\nhigh = [2.0, 3.0]",
        "[distribution.wide_range]\nexp_min = -30\nexp_max = -20",
    ],
)
def test_distribution_parameters_are_checked_together(table):
    # Each key used to be checked against the defaults of the others (high = 1 < low = 2).
    points = expand(parse(dist_config(table)))
    assert len(points) == (4 if "[-3.0, 1.5]" in table else 1)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (
            "[distribution.uniform]\nlow = 1.0\nhigh = -1.0",
            "[distribution.uniform] low, high: need low < high, got low=1.0, high=-1.0",
        ),
        (  # the one combination of the product the sweep would expand that is invalid
            "[distribution.uniform]\nlow = [1.0, 3.0]\nhigh = [2.0, 4.0]",
            "[distribution.uniform] low, high: need low < high, got low=3.0, high=2.0",
        ),
        (
            "[distribution.uniform]\nlow = 2.0",
            "[distribution.uniform] low: need low < high, got low=2.0, high=1.0 "
            "(high = 1.0: the default)",
        ),
        (
            "[distribution.wide_range]\nexp_min = -20\nexp_max = -30",
            "[distribution.wide_range] exp_min, exp_max: need exp_min <= exp_max, "
            "got exp_min=-20, exp_max=-30",
        ),
    ],
)
def test_invalid_parameter_combination_is_named(table, expected):
    message = error_of(dist_config(table))
    assert message.endswith(expected), message


def dist_error(table: str, extra: str = "") -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(dist_config(table, extra), "cfg.toml", catalog=fake_catalog())
    message = str(info.value)
    assert message.startswith("config error in cfg.toml: [distribution.") and "\n" not in message
    return message


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ("[distribution.uniform]\nhigh = inf", "parameter 'high' must be a finite number, got inf"),
        ("[distribution.uniform]\nlow = -inf", "parameter 'low' must be a finite number, got -inf"),
        ("[distribution.exp_rand]\nphi = nan", "parameter 'phi' must be a finite number, got nan"),
        ("[distribution.exp_rand]\nphi = [1.0, inf]", "'phi' must be a finite number, got inf"),
        ("[distribution.normal]\nstd = 1" + "0" * 400, "an integer beyond the float64 range"),
        (
            "[distribution.uniform]\nlow = -1e308\nhigh = 1e308",
            "need high - low <= 1.798e+308 (finite in float64), got low=-1e+308, high=1e+308",
        ),
        (
            "[distribution.exp_rand]\nphi = 1e308",
            "[distribution.exp_rand] phi: need phi <= 11.09 for finite float32 entries "
            "(exp(phi*g) <= 3.403e+38 for normal draws |g| <= 8), got phi=1e+308",
        ),
        ("[distribution.exp_rand]\nphi = [2.0, 12.0]", "need phi <= 11.09"),
        (
            "[distribution.uniform]\nhigh = 1e39",
            "need |low|, |high| <= 3.403e+38 for finite float32",
        ),
        ("[distribution.normal]\nstd = 1e38", "need |mean| + 8*std <= 3.403e+38"),
        ("[distribution.wide_range]\nexp_max = 127", "need exp_max <= 126 for finite float32"),
        (
            "[distribution.wide_range]\nexp_min = -127",
            "need exp_min >= -126 for float32 inputs; float64 inputs go down to -1022, "
            "got exp_min=-127",
        ),
    ],
)
def test_parameters_giving_non_finite_inputs_are_refused(table, expected):
    assert expected in dist_error(table)


def test_finite_bounds_follow_input_dtype():
    f64 = 'input_dtype = "float64"'
    for table in (
        "[distribution.exp_rand]\nphi = 88.72",
        "[distribution.wide_range]\nexp_max = 127",
        "[distribution.wide_range]\nexp_min = -1022\nexp_max = 1023",  # was capped at float32's
        "[distribution.uniform]\nhigh = 1e39",
    ):
        parse_config(dist_config(table, f64), "cfg.toml", catalog=fake_catalog())
    assert "need exp_max <= 1023 for finite float64 entries (U[1,2)*2^1024" in dist_error(
        "[distribution.wide_range]\nexp_max = 1024", f64
    )
    assert "need exp_min >= -1022 for float64 inputs, got exp_min=-1023" in dist_error(
        "[distribution.wide_range]\nexp_min = -1023", f64
    )
    assert parse(dist_config("[distribution.exp_rand]\nphi = 11.09")).dist_params
    message = dist_error("[distribution.exp_rand]\nphi = 88.73", f64)
    assert "need phi <= 88.72 for finite float64 entries" in message and "got phi=88.73" in message


def test_config_that_is_not_utf8_names_file_and_offset(tmp_path):
    from precision.runner.config import load_config

    path = tmp_path / "b.toml"
    path.write_bytes(b'name="x\xff"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, catalog=fake_catalog())
    assert str(info.value) == (
        f"config error in {path}: not valid UTF-8 (TOML files must be): byte 0xff at byte "
        "offset 7 (line 1): invalid start byte"
    )
    # past the text reader's first chunk, the offset is still the file's
    path.write_bytes(b"# " + b"a" * 20000 + b'\n\nname = "\xc3"\n')
    with pytest.raises(ConfigError, match="byte 0xc3 at byte offset 20012 \\(line 3\\)"):
        load_config(path, catalog=fake_catalog())


@pytest.mark.parametrize(
    ("arch", "model"),
    [("sm86", "sm80"), ("sm_87", "sm80"), ("SM86", "sm80"), ("sm72", "sm70"), ("sm120", "sm100")],
)
def test_arch_modelled_by_another_names_that_model(arch, model):
    """sm_86 is run with sm80's model (docs/coverage.md): the message says so, rather than
    suggesting the nearest spelling ('sm89', whose model differs)."""
    message = error_of(MINIMAL.replace('backend = ["emulator"]', f'arch = ["{arch}"]'))
    assert f"unknown arch {arch!r}" in message
    assert f"{model!r} models it, so write {model!r}" in message, message
    assert "did you mean" not in message


@pytest.mark.parametrize(("arch", "hint"), [("sm_90", "sm90"), ("sm91", "sm90")])
def test_arch_misspelling_still_gets_the_nearest_name(arch, hint):
    message = error_of(MINIMAL.replace('backend = ["emulator"]', f'arch = ["{arch}"]'))
    assert f"did you mean {hint!r}" in message and "models it" not in message, message


@pytest.mark.parametrize("arch", ["sm60", "sm_61", "SM52"])
def test_arch_before_volta_says_it_has_no_tensor_cores(arch):
    # It used to get "did you mean 'sm90'", the nearest spelling, which has nothing to do with
    # a Pascal GPU.
    message = error_of(MINIMAL.replace('backend = ["emulator"]', f'arch = ["{arch}"]'))
    assert f"unknown arch {arch!r}: GPUs before sm_70 (Volta) have no tensor cores" in message
    assert "did you mean" not in message


NON_SQUARE = """\
name = "p"
[sweep]
m = [16, 32]
n = [16]
k = [16]
distribution = ["uniform"]
method = ["plain"]
format = ["fp16"]
"""
OZAKI_AUTO = """\
name = "o"
[sweep]
size = [16]
distribution = ["uniform"]
method = ["ozaki2"]
format = ["int8"]
target = ["fp64"]
terms = ["auto"]
"""


@pytest.mark.parametrize(
    ("text", "plot", "message"),
    [
        (NON_SQUARE, 'x = "size"', "[plot] x = 'size': the sweep has non-square shapes"),
        (NON_SQUARE, 'x = "terms"', "[plot] x = 'terms': the sweep has no values in column"),
        (NON_SQUARE, 'hue = "phi"', "[plot] hue = 'phi': the sweep has no values in column"),
    ],
)
def test_a_plot_table_the_sweep_cannot_be_drawn_with_is_refused_before_running(text, plot, message):
    """It used to be accepted: every point was computed and stored, and the run then died in
    its figures with a traceback (x = "size" on non-square shapes, x = "terms" without Ozaki
    points) or drew what `precision plot` refuses (hue = "phi" without exp_rand)."""
    assert message in error_of(f"{text}[plot]\n{plot}\n")


@pytest.mark.parametrize(
    ("text", "plot"),
    [(NON_SQUARE, 'x = "m"'), (OZAKI_AUTO, 'x = "terms"'), (MINIMAL, 'x = "size"\nhue = "phi"')],
)
def test_a_plot_table_the_sweep_can_be_drawn_with_is_accepted(text, plot):
    config = parse_config(f"{text}[plot]\n{plot}\n", "cfg.toml")  # the real catalog (ozaki2)
    assert f"{config.plot.x}" in plot


def test_a_stored_config_is_read_without_the_plot_check_where_nothing_is_drawn():
    text = f'{NON_SQUARE}[plot]\nx = "size"\n'
    config = parse_config(text, "cfg.toml", catalog=fake_catalog(), check_plot=False)
    assert len(expand(config)) == 2
