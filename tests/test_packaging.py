"""What a team depending on kvctl gets from its package (issue 27): the wheel carries
the license and the type markers, the version is written once, ``python -m kvctl``
never imports from the working folder, and a plain install says how to add Spark."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import kvctl

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_holds_the_license_and_the_type_markers(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy: setuptools leaves a build/ folder behind
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("kvctl-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for package in ("spi", "providers", "kvctl", "migrations"):
        assert f"{package}/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith("tests/") for n in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert f"Version: {kvctl.__version__}" in metadata
    assert "License-Expression: Apache-2.0" in metadata
    assert "Provides-Extra: testing" in metadata and "Provides-Extra: spark" in metadata


def test_the_version_is_written_once() -> None:
    assert importlib.metadata.version("kvctl") == kvctl.__version__
    assert "version =" not in (ROOT / "pyproject.toml").read_text().split("[project.optional-dependencies]")[0]
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert (ROOT / "CHANGELOG.md").is_file()


def test_python_m_kvctl_ignores_packages_in_the_working_folder(tmp_path: Path) -> None:
    for package in ("spi", "providers", "migrations"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("raise ImportError('the working folder was imported')\n")
    done = subprocess.run(
        [sys.executable, "-m", "kvctl", "--url", "memory://", "revision"],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "0"), done.stderr
    assert "working folder" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("command", [["export", "t", "--out", "out"], ["import", "t", "--in", "in.csv"]])
def test_export_and_import_without_spark_say_how_to_add_it(tmp_path: Path, command: list[str]) -> None:
    """Without the ``spark`` extra (pyspark made unimportable here): exit 2 and the pip line."""
    code = (
        "import sys; sys.modules['pyspark'] = None\n"
        "from kvctl.cli import main\n"
        f"sys.argv = ['kvctl', '--url', 'memory://', *{command!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "pip install 'kvctl[spark]'" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


SPARK_ONLY = ("kvctl/spark/", "pyspark_kvctl/", "spi/testing/")
"""Code a plain install does not run: Spark's (the ``spark`` extra) and the conformance
kit's (the ``testing`` extra)."""


def _imported_top_modules(path: Path) -> set[str]:
    """The top-level module names ``path`` imports anywhere (function bodies included)."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_a_plain_install_has_every_module_the_commands_import() -> None:
    """Every third-party module that code outside Spark and the conformance kit imports
    comes from a base dependency, so ``pip install kvctl`` (no extras) runs ``put --file``,
    ``copy`` and the dashboard (issue 34: pyarrow was only in the extras)."""
    import importlib.metadata as md
    import re

    ours = {"spi", "providers", "kvctl", "migrations", "pyspark_kvctl"}
    base = {
        re.split(r"[\s\[<>=!~;]", req, maxsplit=1)[0].lower().replace("_", "-")
        for req in md.requires("kvctl") or []
        if "extra ==" not in req
    }
    owners = md.packages_distributions()
    missing = {}
    for package in ("spi", "providers", "kvctl", "migrations"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith(SPARK_ONLY):
                continue
            for module in _imported_top_modules(path) - ours - set(sys.stdlib_module_names):
                dists = {d.lower().replace("_", "-") for d in owners.get(module, [module])}
                if not dists & base:
                    missing.setdefault(module, relative)
    assert not missing, f"imported outside Spark but not a base dependency: {missing}"
