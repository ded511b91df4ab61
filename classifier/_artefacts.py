"""Trained artefacts on disk: one directory per version, an ACTIVE pointer, a stamp of what they fit.

A version records the corpus fingerprint and the embedder it was built with; loading one that no
longer matches raises `ModelError` so the caller rebuilds it (never uses it silently).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import joblib

from servetriage._errors import ModelError

FORMAT = 8  # 2: incident centroids, fitted threshold, exception lines; 3: seeded classifier;
# 4: code-path attribution, the fault_lines feature, calibration on unseen and known variants;
# 5: calibration reads examples as served (log shape, failure chain, printouts set aside);
# 6: catalogue messages rendered as training examples, folds holding out their source directories;
# 7: no catalogue hit in a symptom category;
# 8: the threshold is fitted on the served sequence (earlier fault, fusion, AFTER_FUSION adjustments)


@dataclasses.dataclass(frozen=True)
class Meta:
    version: str
    format: int
    corpus_fingerprint: str
    embedder: str | None
    created: float
    metrics: dict[str, Any]
    examples: int
    feedback_examples: int = 0
    parent: str | None = None


class ArtefactStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, version: str) -> Path:
        return self.root / version

    def new_version(self) -> str:
        base = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        n = 0
        while (self.root / f"{base}-{n}").exists():
            n += 1
        return f"{base}-{n}"

    def versions(self) -> list[Meta]:
        if not self.root.is_dir():
            return []
        out = []
        for d in sorted(self.root.iterdir()):
            if (d / "meta.json").is_file():
                try:
                    out.append(self.meta(d.name))
                except ModelError:
                    continue
        return out

    def meta(self, version: str) -> Meta:
        try:
            data = json.loads((self.path(version) / "meta.json").read_text())
            return Meta(**data)
        except (OSError, ValueError, TypeError) as exc:
            raise ModelError(f"model {version}: unreadable metadata ({type(exc).__name__})") from None

    def active(self) -> str | None:
        try:
            v = (self.root / "ACTIVE").read_text().strip()
        except OSError:
            return None
        return v if v and (self.path(v) / "meta.json").is_file() else None

    def activate(self, version: str) -> None:
        if not (self.path(version) / "meta.json").is_file():
            raise ModelError(f"no model version {version!r}")
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".ACTIVE.{os.getpid()}"
        tmp.write_text(version)
        os.replace(tmp, self.root / "ACTIVE")

    def save(self, meta: Meta, objects: dict[str, Any]) -> Path:
        """Write into a temporary directory, then rename: a reader never sees half a version."""
        final = self.path(meta.version)
        tmp = self.root / f".tmp-{meta.version}-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        for name, obj in objects.items():
            if hasattr(obj, "save") and name == "index":
                obj.save(tmp / "index")
            else:
                joblib.dump(obj, tmp / f"{name}.joblib")
        (tmp / "meta.json").write_text(json.dumps(dataclasses.asdict(meta), indent=2))
        os.replace(tmp, final)
        return final

    def load_object(self, version: str, name: str) -> Any:
        path = self.path(version) / f"{name}.joblib"
        try:
            return joblib.load(path)
        except (OSError, EOFError, ValueError) as exc:
            raise ModelError(f"model {version}: cannot load {name} ({type(exc).__name__})") from None

    def check(self, meta: Meta, corpus_fingerprint: str, embedder: str | None) -> None:
        if meta.format != FORMAT:
            raise ModelError(f"model {meta.version} has format {meta.format}, this build reads {FORMAT}")
        if meta.corpus_fingerprint != corpus_fingerprint:
            raise ModelError(f"model {meta.version} was trained on another corpus ({meta.corpus_fingerprint})")
        if embedder is not None and meta.embedder != embedder:
            raise ModelError(f"model {meta.version} was built with embedder {meta.embedder}, not {embedder}")
