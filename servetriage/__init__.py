"""servetriage: explains LLM-serving failure logs (SGLang, vLLM, TensorRT-LLM).

    >>> from servetriage import Engine
    >>> Engine().diagnose_text(log).category

The public surface is what this module exports; submodules starting with `_` are private.
"""

from ._errors import ConfigError, CorpusError, InputError, InputTooLarge, ModelError, ServetriageError
from ._settings import Settings
from .classifier import Diagnosis, Engine

__version__ = "0.1.0"

__all__ = [
    "ConfigError", "CorpusError", "Diagnosis", "Engine", "InputError", "InputTooLarge", "ModelError",
    "ServetriageError", "Settings", "__version__",
]
