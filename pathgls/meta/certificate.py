"""The certificate of a calibrated gate: what was guaranteed, on which rows, and when it applies.

``pathgls calibrate --risk`` writes it into the fusion config as ``[calibration.certificate]``
(deploy) and ``[calibration.reject_certificate]`` (reject); ``pathgls gate --config`` and the
HTML run report read it back (:func:`read_certificates`), print it, and warn when the run
differs from the calibration rows (:func:`drift_warnings`): other subjects, other organs, or
another module coverage — the guarantee holds for rows exchangeable with the calibration rows,
and a run of another model or organ is not.

May import: core, :mod:`pathgls.meta.certify`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathgls.errors import ConfigError
from pathgls.meta.certify import METHOD, METHOD_BATCH, Certified
from pathgls.meta.certify_run import METHOD_RUN

if TYPE_CHECKING:
    from pathgls.types import ScoreCard

#: A module whose share of rows differs by more than this between run and calibration is named.
COVERAGE_GAP = 0.2


@dataclass(frozen=True)
class Certificate:
    """A certified (or refused) threshold with the rows it rests on."""

    side: str  # deploy or reject
    certified: bool
    threshold: float | None
    risk: float  # α (deploy: unacceptable among deployed) or β (reject: acceptable among rejected)
    confidence: float  # 1 − δ
    n: int  # labelled calibration rows
    bound: float | None  # Clopper–Pearson upper bound reached at the threshold
    rate: float  # share of the calibration rows deployed (or rejected) at the threshold
    n_selected: int
    n_errors: int
    date: str
    labels: str  # where the labels came from ("review labels labels.tsv", "… ≥ 3")
    subjects: tuple[str, ...] = ()
    organs: tuple[str, ...] = ()
    coverage: dict[str, float] = field(default_factory=dict)  # module → share of rows scored
    weights: dict[str, float] = field(default_factory=dict)  # the fusion weights of the trust
    method: str = METHOD
    reason: str = ""  # why nothing was certified
    rows_needed: int | None = None
    # batch mode: the share is the realised one among the deployed of the next batch of this
    # many reports; batch_tail bounds the chance that such a batch breaks the risk
    batch: int | None = None
    batch_tail: float | None = None
    # run mode: the share is the realised one among the run's own deployed (or rejected)
    # reports; the run (its folder, its report count, a digest of its card ids) and, at the
    # threshold, how many of its reports are selected and at most how many wrongly
    run: str = ""
    run_cards: str = ""
    run_items: int | None = None
    run_selected: int | None = None
    run_errors_bound: int | None = None

    @classmethod
    def from_result(
        cls,
        res: Certified,
        *,
        labels: str,
        subjects: Iterable[str],
        organs: Iterable[str],
        coverage: Mapping[str, float],
        weights: Mapping[str, float],
        run: str = "",
        run_cards: str = "",
    ) -> Certificate:
        """The certificate of a :func:`pathgls.meta.certify.certify_deploy` (or reject, or
        :func:`~pathgls.meta.certify.certify_for_run`: pass the run's folder and card digest)
        result."""
        method = METHOD if res.batch is None else METHOD_BATCH
        return cls(
            side=res.side,
            certified=res.threshold is not None,
            threshold=res.threshold,
            risk=res.risk,
            confidence=res.confidence,
            n=res.n,
            bound=None if res.bound is None else round(res.bound, 6),
            rate=round(res.rate, 6),
            n_selected=res.n_selected,
            n_errors=res.n_errors,
            date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            labels=labels,
            subjects=tuple(sorted(set(subjects))),
            organs=tuple(sorted(set(organs))),
            coverage={m: round(float(v), 4) for m, v in coverage.items()},
            weights=dict(weights),
            reason=res.reason or "",
            rows_needed=res.rows_needed,
            method=METHOD_RUN if res.run_items is not None else method,
            batch=res.batch,
            batch_tail=None if res.batch_tail is None else round(res.batch_tail, 6),
            run=run if res.run_items is not None else "",
            run_cards=run_cards if res.run_items is not None else "",
            run_items=res.run_items,
            run_selected=res.run_selected,
            run_errors_bound=res.run_errors_bound,
        )

    def to_toml(self) -> dict[str, Any]:
        """A TOML table (None values left out: TOML has no null)."""
        data = asdict(self)
        data["subjects"], data["organs"] = list(self.subjects), list(self.organs)
        return {k: v for k, v in data.items() if v is not None}

    @classmethod
    def from_toml(cls, data: Mapping[str, Any]) -> Certificate:
        """Read back :meth:`to_toml`.

        Raises:
            ConfigError: a field is missing or of the wrong kind.
        """
        try:
            kw: dict[str, Any] = {k: data.get(k) for k in cls.__dataclass_fields__ if k in data}
            nullable = ("threshold", "bound", "rows_needed", "batch", "batch_tail")
            for k in (*nullable, "run_items", "run_selected", "run_errors_bound"):  # no null
                kw.setdefault(k, None)
            kw["subjects"] = tuple(str(s) for s in data.get("subjects", ()))
            kw["organs"] = tuple(str(s) for s in data.get("organs", ()))
            kw["coverage"] = {str(k): float(v) for k, v in dict(data.get("coverage", {})).items()}
            kw["weights"] = {str(k): float(v) for k, v in dict(data.get("weights", {})).items()}
            return cls(**kw)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"unreadable certificate: {e}") from e

    def lines(self) -> list[str]:
        """The certificate in words, one fact a line."""
        what = (
            "unacceptable among deployed" if self.side == "deploy" else "acceptable among rejected"
        )
        head = f"{self.side} certificate ({self.method}, {self.date})"
        if self.batch is not None:
            head += f"; batch mode: the realised share in a batch of {self.batch} reports"
        if self.run_items is not None:
            head += (
                f"; run mode: the realised share among the reports of the run {self.run} "
                f"({self.run_items} reports)"
            )
        if self.certified:
            where = (
                f"{self.side} at trust ≥ {self.threshold:.3f}"
                if self.side == "deploy"
                else f"reject below trust {self.threshold:.3f}"
            )
            if self.run_items is not None:
                first = (
                    f"{where}: of this run's {self.run_selected} {self.side}ed reports, at most "
                    f"{self.run_errors_bound} {what.split(' among ')[0]} (share ≤ {self.bound:.3f}"
                    f" ≤ {self.risk:g}) with probability ≥ {self.confidence:g}"
                )
            elif self.batch is None:
                first = (
                    f"{where}: share {what} ≤ {self.risk:g} with probability ≥ "
                    f"{self.confidence:g} (bound {self.bound:.3f})"
                )
            else:
                first = (
                    f"{where}: in a batch of {self.batch} reports, share {what} ≤ {self.risk:g} "
                    f"with probability ≥ {self.confidence:g} (risk bound {self.bound:.3f}; "
                    f"chance a batch breaks it ≤ {self.batch_tail:.3f})"
                )
            rate = f"{self.rate:.0%} of the calibration rows {self.side}ed ({self.n_selected})"
        else:
            first = f"NOT certified: {self.reason}"
            rate = ""
        span = (
            f"on {self.n} labelled rows ({self.labels}); subjects: "
            f"{', '.join(self.subjects) or 'not recorded'}; organs: "
            f"{', '.join(self.organs) or 'not recorded'}"
        )
        cov = ", ".join(f"{m} {v:.0%}" for m, v in self.coverage.items())
        return [head, first, *([rate] if rate else []), span, f"module coverage: {cov or '—'}"]


def read_certificates(config: str | os.PathLike[str]) -> list[Certificate]:
    """The certificates in a config file written by ``pathgls calibrate --risk`` (may be none).

    Raises:
        ConfigError: the file is not TOML or a certificate is malformed.
    """
    import tomllib

    try:
        data = tomllib.loads(Path(config).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{config}: cannot read: {e}") from e
    cal = data.get("calibration", {})
    if not isinstance(cal, dict):
        return []
    return [
        Certificate.from_toml(cal[k])
        for k in ("certificate", "reject_certificate")
        if isinstance(cal.get(k), dict)
    ]


def module_coverage(rows: Iterable[Mapping[str, float | None]]) -> dict[str, float]:
    """Module → share of rows with a finite score for it (modules no row has are left out)."""
    rows = list(rows)
    if not rows:
        return {}
    names = sorted({m for r in rows for m in r})
    out = {}
    for m in names:
        have = sum(1 for r in rows if (v := r.get(m)) is not None and math.isfinite(float(v)))
        if have:
            out[m] = have / len(rows)
    return out


def drift_warnings(
    cert: Certificate,
    *,
    subjects: Iterable[str],
    organs: Iterable[str],
    coverage: Mapping[str, float],
    run_cards: str = "",
) -> list[str]:
    """Ways in which a run differs from the calibration rows of ``cert`` (empty: none seen).

    Subjects and organs are compared when the certificate recorded them; a module is named when
    its share of scored rows differs by more than :data:`COVERAGE_GAP`. A run-mode certificate
    holds for the reports of its own run only: ``run_cards`` (:func:`card_digest` of the gated
    cards) must be its digest.
    """
    out = []
    if cert.run_cards and run_cards != cert.run_cards:
        out.append(
            f"this certificate is for the {cert.run_items} reports of the run {cert.run}; these "
            "reports are not that run's, so its guarantee does not apply to them (certify for "
            "this run: pathgls calibrate … --risk … --for-run RUN_DIR)"
        )
    new_subjects = sorted(set(subjects) - set(cert.subjects))
    if cert.subjects and new_subjects:
        out.append(
            f"subject(s) not among the calibration rows': {', '.join(new_subjects)} "
            f"(calibrated on {', '.join(cert.subjects)})"
        )
    new_organs = sorted(set(organs) - set(cert.organs))
    if cert.organs and new_organs:
        out.append(
            f"organ(s) not among the calibration rows': {', '.join(new_organs)} "
            f"(calibrated on {', '.join(cert.organs)})"
        )
    for m in sorted(set(coverage) | set(cert.coverage)):
        a, b = float(coverage.get(m, 0.0)), float(cert.coverage.get(m, 0.0))
        if abs(a - b) > COVERAGE_GAP:
            out.append(f"module {m} scored on {a:.0%} of this run's items, {b:.0%} at calibration")
    if out:
        out.append(
            "the certificate holds for reports like the calibration rows; recalibrate on "
            "labelled reports of this kind"
        )
    return out


def card_digest(cards: Iterable[ScoreCard]) -> str:
    """A digest of the ids of the cards that are not failed (which reports a run holds)."""
    import hashlib

    # the id of labels.tsv (pathgls.inspect.review_page.card_id, a floor above)
    ids = sorted(
        f"{c.subject}/{c.item_id}" if c.subject else str(c.item_id)
        for c in cards
        if c.status != "failed"
    )
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()[:16]


def run_profile(cards: Sequence[ScoreCard]) -> tuple[set[str], set[str], dict[str, float]]:
    """Subjects, organs (named by the reports) and module coverage of the gated cards."""
    from pathgls.meta.calibrate import calibrated_modules
    from pathgls.meta.expert_rows import report_organ
    from pathgls.text import build_extractor

    done = [c for c in cards if c.status != "failed"]
    extractor = build_extractor("lexicon")
    organs = set()
    for c in done:
        text = c.reports["original"].text if "original" in c.reports else ""
        if text.strip() and (organ := report_organ(text, extractor)) is not None:
            organs.add(organ)
    modules = calibrated_modules()
    coverage = module_coverage([{m: c.value(m) for m in modules} for c in done])
    return {c.subject for c in done}, organs, coverage
