"""The one direction of flow, checked on the source: the engine and the corpus know nothing of Slack or
feedback, and bot/ reaches the engine only through its public names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _imports(package: str) -> list[tuple[str, str]]:
    """(file, module) for every import in a top-level package directory, relative imports resolved."""
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out.extend((rel, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    dotted = package.replace("/", ".") if "/" in package else f"servetriage.{package}"
                    parts = [*dotted.split("."), *path.relative_to(ROOT / package).parts[:-1]]
                    base = ".".join(parts[: len(parts) - node.level + 1])
                    module = f"{base}.{node.module}" if node.module else base
                else:
                    module = node.module or ""
                out.extend((rel, f"{module}.{alias.name}" if module.endswith("classifier") else module)
                           for alias in node.names)
    return out


@pytest.mark.parametrize("package", ["classifier", "corpus"])
def test_the_engine_and_the_corpus_import_nothing_of_slack_or_feedback(package):
    bad = [(f, m) for f, m in _imports(package)
           if m.startswith(("servetriage.bot", "servetriage.feedback", "slack_bolt", "slack_sdk"))]
    assert bad == []


@pytest.mark.parametrize("package", ["bot", "feedback"])
def test_bot_and_feedback_use_only_the_engines_public_names(package):
    bad = [(f, m) for f, m in _imports(package) if m.startswith("servetriage.classifier._")]
    assert bad == []


def test_feedback_knows_nothing_of_slack_and_the_bot_nothing_of_feedback():
    """feedback/ is storage and learning behind a Slack-free service; bot/ reaches it through its
    `FeedbackService` protocol, never by importing it."""
    slack = [(f, m) for f, m in _imports("feedback") if m.startswith(("servetriage.bot", "slack_bolt", "slack_sdk"))]
    feedback = [(f, m) for f, m in _imports("bot") if m.startswith("servetriage.feedback")]
    assert slack == [] and feedback == []


def test_storage_imports_no_package_of_ours_but_the_settings():
    ours = [(f, m) for f, m in _imports("servetriage/storage")
            if m.startswith("servetriage.") and not m.startswith(("servetriage.storage", "servetriage._settings",
                                                                  "servetriage._errors"))]
    assert ours == []
