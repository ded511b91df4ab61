"""Evaluation and benchmarks: labelled-set figures (`servetriage eval`) and speed (`eval/bench.py`)."""

from ._dataset import Case, load_cases
from ._metrics import Prediction, abstention, initiating_accuracy, macro_f1, per_category, reliability, summary, top_k
from ._run import Report, evaluate, predict, render_report, report_json

__all__ = [
    "Case", "Prediction", "Report", "abstention", "evaluate", "initiating_accuracy", "load_cases", "macro_f1",
    "per_category", "predict", "reliability", "render_report", "report_json", "summary", "top_k",
]
