"""The README's two set-up commands are the ones the project runs: `.ci/run` ends with exactly
the README's test command (the brief: CI runs the checks, then that command), and the first
command runs a config that exists."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tests = [b for b in _bash_blocks(readme) if "pytest" in b and b.startswith("python3 -m venv")]
    assert len(tests) == 1, tests
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    last = [line for line in ci if line.strip() and not line.lstrip().startswith("#")][-1]
    assert last.strip() == tests[0]


def test_the_readme_first_command_runs_a_shipped_config():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = next(b for b in _bash_blocks(readme) if b.startswith("python3 -m venv"))
    assert "pytest" not in first
    words = shlex.split(first.replace("&&", " "))
    configs = [w for w in words if w.endswith(".toml")]
    assert configs and all((ROOT / c).is_file() for c in configs), configs
