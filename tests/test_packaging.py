"""A plain `pip install .` (the Docker image) must ship every subpackage and data file."""

import os
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_declared():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = set(config["packages"])
    found = {"servetriage"}
    for top in config["package-dir"]:
        if top == "servetriage":
            continue
        base = ROOT / config["package-dir"][top]
        for root, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            if "__init__.py" in files:
                rel = Path(root).relative_to(base)
                found.add(".".join([top, *rel.parts]) if rel.parts else top)
    assert found <= declared, sorted(found - declared)


def test_data_files_exist():
    assert (ROOT / "corpus" / "categories.yaml").is_file()
    assert list((ROOT / "corpus" / "incidents").glob("*.yaml"))
    assert (ROOT / "bot" / "manifest.yaml").is_file()
    assert (ROOT / "servetriage" / "examples" / "vllm-oom-then-dead.log").is_file()
