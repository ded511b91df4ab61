"""The sentence model's forward pass in numpy, so that serving never imports torch.

all-MiniLM-L6-v2 is a six-layer BERT with mean pooling. Importing torch and sentence-transformers
to run it costs 4-5 s of a cold start; its weights (safetensors), its tokenizer (the Rust
`tokenizers` library) and twelve matrix products a layer need only numpy. The vectors agree with
sentence-transformers' to float32 rounding (a test holds them together), so an index built by either
is read by the other. A model directory of another shape (another architecture, pooling or
activation) is `Unsupported` and goes to sentence-transformers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

BATCH = 64  # texts a forward pass; sorted by length first, so padding stays short
_F = np.float32
_SQRT_HALF = _F(0.7071067811865476)
# Abramowitz & Stegun 7.1.26: erf to 1.5e-7, far inside float32 rounding of the activations.
_ERF_P = _F(0.3275911)
_ERF_A = tuple(_F(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_MODULES = ("sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
            "sentence_transformers.models.Normalize")


class Unsupported(Exception):
    """The model directory is not one this forward pass reproduces."""


@dataclass(frozen=True)
class _Layer:
    qkv: np.ndarray  # (D, 3D): query, key and value side by side
    qkv_bias: np.ndarray
    out: np.ndarray
    out_bias: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


def _gelu(h: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, computed in place on two scratch buffers: scipy's erf is 6x slower here."""
    z = h * _SQRT_HALF
    a = np.abs(z)
    t = a * _ERF_P
    t += _F(1)
    np.reciprocal(t, out=t)
    p = t * _ERF_A[0]
    for coef in _ERF_A[1:]:
        p += coef
        p *= t
    np.multiply(a, a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    p *= a  # 1 - erf(|z|)
    np.subtract(_F(1), p, out=p)
    np.copysign(p, z, out=p)  # erf(z)
    p += _F(1)
    p *= h
    p *= _F(0.5)
    return p


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise Unsupported(f"{path.name}: {type(exc).__name__}") from None


def _check_shape(path: Path) -> tuple[dict[str, Any], bool]:
    """The model's config, and whether texts are lower-cased before tokenising; `Unsupported` else."""
    try:
        return _shape(path)
    except (KeyError, IndexError, TypeError, AttributeError) as exc:  # a malformed config file
        raise Unsupported(f"{path.name}: {type(exc).__name__} in its configuration") from None


def _shape(path: Path) -> tuple[dict[str, Any], bool]:
    modules = _read_json(path / "modules.json")
    kinds = tuple(m.get("type") for m in modules)
    if kinds not in (_MODULES, _MODULES[:2]):
        raise Unsupported(f"modules {kinds}")
    pooling = _read_json(path / modules[1]["path"] / "config.json")
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    if modes != {"pooling_mode_mean_tokens"}:
        raise Unsupported(f"pooling {sorted(modes)}")
    config = _read_json(path / "config.json")
    if (config.get("model_type"), config.get("hidden_act"), config.get("position_embedding_type", "absolute")) \
            != ("bert", "gelu", "absolute"):
        raise Unsupported("not a BERT encoder with exact GELU and absolute positions")
    for name in ("model.safetensors", "tokenizer.json"):
        if not (path / name).is_file():
            raise Unsupported(f"no {name}")
    st_config = path / "sentence_bert_config.json"
    lower = bool(_read_json(st_config).get("do_lower_case", False)) if st_config.is_file() else False
    return config, lower


class BertEncoder:
    """Mean-pooled, unit-length sentence vectors of a BERT sentence-transformers directory."""

    def __init__(self, path: Path, max_tokens: int) -> None:
        from safetensors.numpy import load_file  # noqa: PLC0415 - light: no torch
        from tokenizers import Tokenizer  # noqa: PLC0415

        config, self._lower = _check_shape(path)
        self._heads = int(config["num_attention_heads"])
        self._eps = _F(config["layer_norm_eps"])
        weights = {k.removeprefix("bert."): v for k, v in load_file(str(path / "model.safetensors")).items()}
        if any(w.dtype != _F for w in weights.values() if w.dtype.kind == "f"):
            raise Unsupported("weights are not float32")  # sentence-transformers computes in their own dtype
        try:
            self._layers = [self._layer(weights, f"encoder.layer.{i}.") for i in range(int(config["num_hidden_layers"]))]
            self._words = weights["embeddings.word_embeddings.weight"]
            self._positions = weights["embeddings.position_embeddings.weight"][:max_tokens]
            self._type0 = weights["embeddings.token_type_embeddings.weight"][0]
            self._norm0 = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        except KeyError as exc:
            raise Unsupported(f"no weight {exc}") from None
        self.dim = int(self._words.shape[1])
        try:
            self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        except Exception as exc:  # noqa: BLE001 - the Rust library raises a bare Exception for a bad file
            raise Unsupported(f"tokenizer.json: {exc}") from None
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.no_padding()

    @staticmethod
    def _layer(w: dict[str, np.ndarray], p: str) -> _Layer:
        att = p + "attention.self."
        return _Layer(
            qkv=np.ascontiguousarray(np.concatenate([w[att + n + ".weight"] for n in ("query", "key", "value")]).T),
            qkv_bias=np.concatenate([w[att + n + ".bias"] for n in ("query", "key", "value")]),
            out=np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
            out_bias=w[p + "attention.output.dense.bias"],
            norm1=(w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
            up=np.ascontiguousarray(w[p + "intermediate.dense.weight"].T), up_bias=w[p + "intermediate.dense.bias"],
            down=np.ascontiguousarray(w[p + "output.dense.weight"].T), down_bias=w[p + "output.dense.bias"],
            norm2=(w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]))

    def _norm(self, x: np.ndarray, wb: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        x = x - mean
        var = (x * x).mean(-1, keepdims=True)
        x /= np.sqrt(var + self._eps)
        x *= wb[0]
        x += wb[1]
        return x

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length float32 row per text (texts stripped, as sentence-transformers does)."""
        prepared = [t.strip().lower() if self._lower else t.strip() for t in texts]
        ids = [e.ids for e in self._tokenizer.encode_batch(prepared)]
        order = np.argsort([len(i) for i in ids], kind="stable")
        out = np.zeros((len(texts), self.dim), dtype=_F)
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            out[rows] = self._forward([ids[i] for i in rows])
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        b, n = len(batch), max(len(i) for i in batch)
        d, heads = self.dim, self._heads
        hd = d // heads
        ids = np.zeros((b, n), dtype=np.int64)
        mask = np.zeros((b, n), dtype=_F)
        for r, row in enumerate(batch):
            ids[r, :len(row)] = row
            mask[r, :len(row)] = 1
        x = self._norm((self._words[ids] + self._positions[:n] + self._type0).reshape(b * n, d), self._norm0)
        blocked = ((_F(1) - mask) * np.finfo(_F).min)[:, None, None, :]
        scale = _F(1 / np.sqrt(hd))
        for layer in self._layers:
            qkv = (x @ layer.qkv + layer.qkv_bias).reshape(b, n, 3, heads, hd)
            q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
            k = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))
            v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
            s = q @ k
            s *= scale
            s += blocked
            s -= s.max(-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b * n, d)
            x = self._norm(ctx @ layer.out + layer.out_bias + x, layer.norm1)
            h = _gelu(x @ layer.up + layer.up_bias)
            x = self._norm(h @ layer.down + layer.down_bias + x, layer.norm2)
        m = mask.reshape(b, n, 1)
        pooled = (x.reshape(b, n, d) * m).sum(1) / np.maximum(m.sum(1), _F(1e-9))
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), _F(1e-12))
        result: np.ndarray = pooled.astype(_F, copy=False)
        return result
