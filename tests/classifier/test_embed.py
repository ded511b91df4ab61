"""The sentence model served in numpy gives sentence-transformers' own vectors."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from servetriage._errors import ModelError

from servetriage.classifier._embed import SentenceEmbedder, packaged_model_path

LINES = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate N GiB.",
    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:N, unhandled cuda error",
    "[TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp (worldConfig.cpp:N)",
    "ValueError: The model's max seq len (N) is larger than the maximum number of tokens",
    "   leading and trailing spaces are stripped, as sentence-transformers does   ",
    "",
    "x",
    "Ünïcödé, 日本語 and emoji 🚀 tokenise to word pieces and [UNK]",
    "a line far longer than the model's sixty-four tokens " * 12,
    "KeyError: N",
]


def test_numpy_vectors_agree_with_sentence_transformers():
    served = SentenceEmbedder(None)
    reference = SentenceEmbedder(None, trainable=True)  # runs the forward pass in sentence-transformers
    assert (served.backend, reference.backend) == ("numpy", "sentence-transformers")
    assert served.name == reference.name and served.dim == reference.dim == 384
    ours, theirs = served.encode(LINES), reference.encode(LINES)
    assert ours.dtype == np.float32 and ours.shape == (len(LINES), 384)
    assert np.abs(ours - theirs).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # batching and order do not change a vector (texts are sorted by length into batches)
    assert np.abs(served.encode(LINES[::-1])[::-1] - ours).max() < 1e-6
    with pytest.raises(ModelError, match="trainable"):
        served.model  # noqa: B018 - only a trainable embedder hands out the torch model to fine-tune


def test_a_model_of_another_shape_runs_in_sentence_transformers(tmp_path):
    source = packaged_model_path()
    copy = tmp_path / "cls-pooled"
    copy.mkdir()
    for item in source.iterdir():
        if item.is_file():
            (copy / item.name).symlink_to(item)
    shutil.copytree(source / "1_Pooling", copy / "1_Pooling")
    config = json.loads((copy / "1_Pooling" / "config.json").read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (copy / "1_Pooling" / "config.json").write_text(json.dumps(config))
    embedder = SentenceEmbedder(copy)
    assert embedder.backend == "sentence-transformers"  # the numpy pass reproduces mean pooling only
    assert embedder.encode(["CUDA out of memory"]).shape == (1, 384)


def test_a_malformed_model_directory_is_unsupported_not_a_crash(tmp_path):
    from servetriage.classifier._bert import BertEncoder, Unsupported
    (tmp_path / "modules.json").write_text('[{"type": "sentence_transformers.models.Transformer"}, {}]')
    with pytest.raises(Unsupported):
        BertEncoder(tmp_path, 64)
    (tmp_path / "modules.json").write_text("not json")
    with pytest.raises(Unsupported):
        BertEncoder(tmp_path, 64)
