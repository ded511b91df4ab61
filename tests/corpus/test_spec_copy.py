from pathlib import Path

import pytest

from servetriage.corpus import builtin_dir, load_categories

SPEC = Path(__file__).resolve().parents[3] / "shared" / "spec" / "categories.yaml"


@pytest.mark.skipif(not SPEC.exists(), reason="the shared spec is not beside this checkout")
def test_packaged_categories_match_the_spec():
    assert (builtin_dir() / "categories.yaml").read_bytes() == SPEC.read_bytes()


def test_categories_load_with_roles():
    cats = load_categories()
    assert "unknown" in cats and cats["worker-dead"].symptom and not cats["gpu-oom"].symptom
