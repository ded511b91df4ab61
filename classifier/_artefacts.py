"""The model registry: one directory per version, its state, and the pointer to the active one.

A version records the corpus fingerprint and the embedder it was built with (`meta.json`, fixed
at training) and its life since (`status.json`: candidate, active, rejected or retired, the gate's
figures, a note); loading one that no longer matches raises `ModelError` so the caller rebuilds it
(never uses it silently). The active pointer is an `ActivePointer`: the `ACTIVE` file in the
directory by default, or a row in the shared database when replicas share one (`artefacts_for`).
Pruning a version deletes its heavy objects and keeps its record.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from servetriage._atomic import replace_file
from servetriage._errors import ModelError

FORMAT = 10  # 2: incident centroids, fitted threshold, exception lines; 3: seeded classifier;
# 4: code-path attribution, the fault_lines feature, calibration on unseen and known variants;
# 5: calibration reads examples as served (log shape, failure chain, printouts set aside);
# 6: catalogue messages rendered as training examples, folds holding out their source directories;
# 7: no catalogue hit in a symptom category;
# 8: the threshold is fitted on the served sequence (earlier fault, fusion, AFTER_FUSION adjustments);
# 9: the classifier's vectoriser saved apart (features, linked by retrains), feedback weighted;
# 10: objects as plain pickles (C unpickler: 0.04 s to load where joblib's Python one took 0.66 s)


SUFFIX = ".pickle"  # protocol 5; the objects are ours, written by this store only
MODEL_FORMAT = FORMAT  # the artefact layout this build reads (exported)
STATES = ("candidate", "active", "rejected", "retired")
RECORD_FILES = ("meta.json", "status.json")  # what pruning keeps

if TYPE_CHECKING:
    from servetriage._settings import Settings


class ActivePointer(Protocol):
    """Which version answers; written atomically, read by every process that serves."""

    def read(self) -> str | None: ...

    def write(self, version: str) -> None: ...


class FilePointer:
    """The `ACTIVE` file of a model directory (renamed into place, so a reader sees old or new)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def read(self) -> str | None:
        try:
            return (self.root / "ACTIVE").read_text().strip() or None
        except OSError:
            return None

    def write(self, version: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        replace_file(self.root / "ACTIVE", version)


@dataclasses.dataclass(frozen=True)
class ModelStatus:
    """A version's life after training; a version trained outside the loop has the default."""

    state: str = "retired"
    note: str | None = None
    gate: dict[str, Any] = dataclasses.field(default_factory=dict)
    training_hash: str | None = None   # of the feedback examples it was trained with
    activated: float | None = None


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
    def __init__(self, root: Path, pointer: ActivePointer | None = None) -> None:
        self.root = Path(root)
        self.pointer: ActivePointer = pointer if pointer is not None else FilePointer(self.root)

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
        v = self.pointer.read()
        return v if v and (self.path(v) / "meta.json").is_file() else None

    def activate(self, version: str, note: str | None = None, gate: dict[str, Any] | None = None) -> None:
        """Point at `version` (its state becomes active, the previous active one's retired)."""
        if not self.loadable(version):
            raise ModelError(f"no model version {version!r}")
        previous = self.active()
        self.set_status(version, state="active", activated=time.time(),
                        **({"note": note} if note is not None else {}), **({"gate": gate} if gate is not None else {}))
        self.pointer.write(version)
        if previous is not None and previous != version and self.status(previous).state == "active":
            self.set_status(previous, state="retired")

    # -- the registry: each version's state ---------------------------------------------------------
    def status(self, version: str) -> ModelStatus:
        try:
            data = json.loads((self.path(version) / "status.json").read_text())
            status = ModelStatus(**data)
        except OSError:
            status = ModelStatus()
        except (ValueError, TypeError) as exc:
            raise ModelError(f"model {version}: unreadable status ({type(exc).__name__})") from None
        if status.state == "active" and self.pointer.read() != version:
            return dataclasses.replace(status, state="retired")  # the pointer moved on (a rollback elsewhere)
        if status.state != "active" and self.pointer.read() == version:
            return dataclasses.replace(status, state="active")
        return status

    def set_status(self, version: str, **changes: Any) -> ModelStatus:
        """Change fields of a version's status (`state` one of STATES), written atomically."""
        if "state" in changes and changes["state"] not in STATES:
            raise ModelError(f"unknown model state {changes['state']!r}")
        if not (self.path(version) / "meta.json").is_file():
            raise ModelError(f"no model version {version!r}")
        try:
            current = ModelStatus(**json.loads((self.path(version) / "status.json").read_text()))
        except (OSError, ValueError, TypeError):
            current = ModelStatus()
        status = dataclasses.replace(current, **changes)
        replace_file(self.path(version) / "status.json", json.dumps(dataclasses.asdict(status), indent=2))
        return status

    def loadable(self, version: str) -> bool:
        """Its objects are still on disk (not pruned)."""
        return all((self.path(version) / name).is_file() for name in ("meta.json", f"classifier{SUFFIX}", f"features{SUFFIX}"))

    def strip(self, version: str) -> None:
        """Delete a version's objects and keep its record (meta and status)."""
        directory = self.path(version)
        for child in directory.iterdir():
            if child.name in RECORD_FILES:
                continue
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()

    def save(self, meta: Meta, objects: dict[str, Any], linked: dict[str, str] | None = None) -> Path:
        """Write into a temporary directory, then rename: a reader never sees half a version.

        `linked`: objects this version shares with another (name -> that version), hard-linked rather
        than written again (a retrain keeps its parent's vectoriser); copied where links fail."""
        final = self.path(meta.version)
        tmp = self.root / f".tmp-{meta.version}-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        for name, other in (linked or {}).items():
            source = self.path(other) / f"{name}{SUFFIX}"
            if not source.is_file():
                raise ModelError(f"model {other}: no {name} to share")
            try:
                os.link(source, tmp / source.name)
            except OSError:
                shutil.copy2(source, tmp / source.name)
        for name, obj in objects.items():
            if hasattr(obj, "save") and name == "index":
                obj.save(tmp / "index")
            else:
                with open(tmp / f"{name}{SUFFIX}", "wb") as fh:
                    pickle.dump(obj, fh, protocol=5)
        (tmp / "meta.json").write_text(json.dumps(dataclasses.asdict(meta), indent=2))
        os.replace(tmp, final)
        return final

    def load_object(self, version: str, name: str) -> Any:
        path = self.path(version) / f"{name}{SUFFIX}"
        try:
            with open(path, "rb") as fh:
                return pickle.load(fh)
        except (OSError, EOFError, ValueError, pickle.UnpicklingError, AttributeError, ImportError) as exc:
            raise ModelError(f"model {version}: cannot load {name} ({type(exc).__name__})") from None

    def check(self, meta: Meta, corpus_fingerprint: str, embedder: str | None) -> None:
        if meta.format != FORMAT:
            raise ModelError(f"model {meta.version} has format {meta.format}, this build reads {FORMAT}")
        if meta.corpus_fingerprint != corpus_fingerprint:
            raise ModelError(f"model {meta.version} was trained on another corpus ({meta.corpus_fingerprint})")
        if embedder is not None and meta.embedder != embedder:
            raise ModelError(f"model {meta.version} was built with embedder {meta.embedder}, not {embedder}")


def artefacts_for(settings: Settings) -> ArtefactStore:
    """The registry the settings name: the model directory, with the active pointer in the shared
    database when `SERVETRIAGE_DATABASE_URL` is set (every replica follows the same pointer)."""
    if settings.database_url:
        from servetriage.storage import ActivePointerRow  # noqa: PLC0415 (psycopg only when configured)

        return ArtefactStore(settings.model_dir, ActivePointerRow.shared(settings.database_url))
    return ArtefactStore(settings.model_dir)
