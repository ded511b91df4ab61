"""Evaluation and benchmarks: labelled-set figures (`servetriage eval`) and speed (`eval/bench.py`)."""

from ._dataset import Case, load_cases
from ._metrics import Prediction, abstention, initiating_accuracy, macro_f1, per_category, reliability, summary, top_k
from ._run import (HealthyReport, Report, evaluate, evaluate_healthy, predict, render_report, render_side_by_side,
                   report_json, reports_json)

__all__ = [
    "Case", "HealthyReport", "Prediction", "Report", "abstention", "evaluate", "evaluate_healthy", "initiating_accuracy",
    "load_cases", "macro_f1", "per_category", "predict", "reliability", "render_report", "render_side_by_side", "reports_json",
    "report_json", "summary", "top_k",
]
