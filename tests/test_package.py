"""The wheel a user installs: built from the tree as a release is, installed into an empty venv outside it.
Its metadata has the license, the classifiers and the version `planc --version` prints; it carries LICENSE,
NOTICE and py.typed, and none of tests/, bench/ or .ci/; `twine check --strict` passes on it."""

from __future__ import annotations

import email
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from cli import invoke

import planc

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of the tree, built by its build backend (hatchling, installed here: nothing is downloaded)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--wheel-dir",
            out,
            ROOT,
        ],
        check=True,
        capture_output=True,
    )
    [built] = out.glob("planc-*.whl")
    return built


def test_the_wheel_carries_the_license_notice_and_types_and_nothing_of_the_repository(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = f"planc-{planc.__version__}.dist-info"
    assert {f"{dist_info}/licenses/LICENSE", f"{dist_info}/licenses/NOTICE", "planc/py.typed", "planc/grammar/plan.lark"} <= set(
        names
    )
    assert [name for name in names if name.split("/")[0] in ("tests", "bench", ".ci", "docs", "examples")] == []
    assert all(name.startswith(("planc/", dist_info)) for name in names)
    assert "Apache License" in zipfile.ZipFile(wheel).read(f"{dist_info}/licenses/LICENSE").decode()


def test_its_metadata_has_the_license_classifiers_and_the_version_planc_prints(wheel):
    metadata = email.message_from_bytes(zipfile.ZipFile(wheel).read(f"planc-{planc.__version__}.dist-info/METADATA"))
    printed = invoke("--version").stdout.split()
    assert printed == ["planc", planc.__version__] and metadata["Version"] == planc.__version__
    assert metadata["License-Expression"] == "Apache-2.0" and metadata["Author"] == "planc contributors"
    classifiers = metadata.get_all("Classifier")
    assert {"Typing :: Typed", "Programming Language :: Python :: 3.11"} <= set(classifiers)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"  # the Python CI runs, and only it
    assert [c for c in classifiers if c.startswith("Programming Language :: Python :: 3.")] == [
        f"Programming Language :: Python :: {python}"
    ]


def test_installed_into_an_empty_venv_outside_the_tree_it_says_its_version(wheel, tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", tmp_path / "venv"], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index", wheel],
        check=True,
        capture_output=True,
    )
    said = subprocess.run(
        [python, "-c", "import planc; print(planc.__version__)"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert said.stdout == f"{planc.__version__}\n"
    where = subprocess.run(
        [python, "-c", "import planc; print(planc.__file__)"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert str(tmp_path / "venv") in where.stdout  # the installed copy, not the tree


def test_twine_check_passes_on_the_wheel(wheel):
    """What the package index checks of an upload: the metadata, and the README rendered as the project's page."""
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", wheel], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "PASSED" in checked.stdout and "WARNING" not in checked.stdout + checked.stderr
