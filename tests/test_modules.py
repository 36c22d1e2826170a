"""The score modules are described once (pathgls/modules.py); every list of them derives from it."""

from __future__ import annotations

import dataclasses

from pathgls.cli.gate import MODULE_COLUMNS, MODULE_HEADERS
from pathgls.config import FusionConfig, PathGLSConfig
from pathgls.config.scoring import FUSABLE_MODULES, REFERENCE_MODULES
from pathgls.evidence import EVIDENCE_TYPES
from pathgls.fusion import ENABLE_HINTS
from pathgls.inspect.failures import MODULES as FAILURE_MODULES
from pathgls.inspect.review_page import MODULES as REVIEW_MODULES
from pathgls.inspect.run_report import TABLE_METRICS
from pathgls.meta.calibrate import MODULES as CALIBRATED
from pathgls.meta.calibrate import OPTIONAL_COLUMNS
from pathgls.meta.compare import COMPARABLE
from pathgls.modules import BY_NAME, MODULE_NAMES, SCORE_MODULES
from pathgls.runner.models import Models
from pathgls.runner.pipeline import MODULE_MODELS
from pathgls.runner.summary import METRICS, PLOT_GROUPS


def test_each_list_of_modules_is_the_registry_s() -> None:
    assert FUSABLE_MODULES == MODULE_COLUMNS == REVIEW_MODULES == MODULE_NAMES
    assert ("trust", *MODULE_NAMES) == TABLE_METRICS and PLOT_GROUPS[-len(MODULE_NAMES) :] == (
        MODULE_NAMES
    )
    weighted = tuple(m.name for m in SCORE_MODULES if m.weight is not None)
    assert weighted == CALIBRATED and ("trust", *weighted) == COMPARABLE
    assert FusionConfig().weights == {m: BY_NAME[m].weight for m in weighted}
    assert REFERENCE_MODULES == OPTIONAL_COLUMNS == ("report",)
    assert tuple(m.name for m in SCORE_MODULES if not m.needs_reference) == FAILURE_MODULES
    assert {m: MODULE_HEADERS[m] for m in MODULE_NAMES} == {m.name: m.header for m in SCORE_MODULES}
    assert dict(ENABLE_HINTS) == {m.name: m.enable_hint for m in SCORE_MODULES if m.enable_hint}
    assert {m.name: m.models for m in SCORE_MODULES if m.models} == MODULE_MODELS
    assert dict(EVIDENCE_TYPES) == {m.name: m.evidence for m in SCORE_MODULES}
    assert sorted(METRICS[:-1]) == sorted(MODULE_NAMES) and METRICS[-1] == "trust"


def test_the_documented_orders_and_defaults_are_kept() -> None:
    # summary.csv (docs/formats.md) lists hare before report; the gate, the card and the review
    # page list report first; PathGLS's weights and the report side's
    assert METRICS == ("grounding", "logic", "stability", "hare", "report", "trust")
    assert MODULE_COLUMNS == ("grounding", "logic", "stability", "report", "hare")
    assert dict(PathGLSConfig().fusion.weights) == {
        "grounding": 0.4,
        "logic": 0.3,
        "stability": 0.3,
        "report": 0.4,
    }
    assert [MODULE_HEADERS[m] for m in ("grounding", "logic", "stability")] == ["S_g", "S_l", "S_s"]


def test_a_module_s_models_are_roles_a_worker_loads() -> None:
    roles = {f.name for f in dataclasses.fields(Models)}
    for m in SCORE_MODULES:
        assert set(m.models) <= roles, (m.name, set(m.models) - roles)
        assert m.name == m.evidence.MODULE


def test_without_plugins_the_call_time_lists_are_the_built_ins() -> None:
    from pathgls.cli.gate import CSV_COLUMNS, csv_columns, module_headers
    from pathgls.config import default_reference_modules, default_weights
    from pathgls.fusion import enable_hints
    from pathgls.inspect.failures import COLUMNS as FAILURE_COLUMNS
    from pathgls.inspect.failures import table_columns
    from pathgls.inspect.run_report import table_metrics
    from pathgls.meta.calibrate import calibrated_modules, optional_columns
    from pathgls.meta.compare import comparable
    from pathgls.modules import (
        REFERENCE_FREE,
        WEIGHTED,
        module_names,
        reference_free_modules,
        refresh_score_modules,
        score_modules,
        scoring_order,
        weighted_modules,
    )
    from pathgls.runner.pipeline import module_models
    from pathgls.runner.summary import COLUMNS, columns, plot_groups, summary_metrics

    refresh_score_modules()
    assert score_modules() == SCORE_MODULES and module_names() == MODULE_NAMES
    assert weighted_modules() == WEIGHTED and reference_free_modules() == REFERENCE_FREE
    assert default_weights() == dict(FusionConfig().weights)
    assert default_reference_modules() == REFERENCE_MODULES
    assert enable_hints() == dict(ENABLE_HINTS) and module_models() == MODULE_MODELS
    assert summary_metrics() == METRICS and columns() == COLUMNS
    assert plot_groups() == PLOT_GROUPS and table_metrics() == TABLE_METRICS
    assert csv_columns() == CSV_COLUMNS and module_headers() == MODULE_HEADERS
    assert table_columns() == FAILURE_COLUMNS and comparable() == COMPARABLE
    assert calibrated_modules() == CALIBRATED and optional_columns() == OPTIONAL_COLUMNS
    # the card's order: stability first (scored even without an original report), then the others
    assert [m.name for m in scoring_order()] == [
        "stability",
        "logic",
        "grounding",
        "hare",
        "report",
    ]
    assert all(m.score == f"pathgls.runner.scorers:{m.name}" for m in SCORE_MODULES)
    assert all(callable(m.hook()) for m in SCORE_MODULES)
