"""One version, written once (python/itercast/_version.py), and `itercast --version`'s build report."""

import importlib.metadata
import re
from pathlib import Path

import pytest

import itercast
from itercast import _native
from itercast.cli import main

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def test_the_native_module_was_built_from_the_same_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", itercast.__version__)
    assert _native.build_info()["version"] == itercast.__version__


def test_pyproject_reads_the_version_from_the_version_file():
    if not PYPROJECT.exists():
        pytest.skip("no pyproject.toml next to the tests (tests copied out of the source tree)")
    text = PYPROJECT.read_text()
    assert 'dynamic = ["version"]' in text and not re.search(r"^version\s*=", text, re.MULTILINE)
    assert 'input = "python/itercast/_version.py"' in text


def test_installed_metadata_carries_the_same_version():
    try:
        distribution = importlib.metadata.distribution("itercast")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("itercast is not installed: imported from the source tree")
    if Path(distribution.locate_file("itercast/__init__.py")).resolve() != Path(itercast.__file__).resolve():
        pytest.skip("the installed itercast is not the one imported (PYTHONPATH=python)")
    assert distribution.version == itercast.__version__


def test_version_option_reports_the_build_and_simd_level(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    info = _native.build_info()
    assert lines[0] == f"itercast {itercast.__version__}"
    assert f"compiler: {info['compiler']} ({info['build_type']})" in lines
    assert f"flags: {info['cxx_flags']}" in lines and "-ffp-contract=off" in info["cxx_flags"]
    assert "-march" not in info["cxx_flags"]  # AVX2/AVX-512 code is chosen at run time, not built in
    simd = next(line for line in lines if line.startswith("SIMD: "))
    assert simd.startswith(f"SIMD: {info['simd']}, chosen at run time") and "ITERCAST_SIMD" in simd
