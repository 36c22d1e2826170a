"""``pathgls calibrate --risk``: certified gate thresholds and their certificate.

The rows come from a validation table, a run directory with labels (numeric labels, a
``pathgls review`` labels file, or expert scores with ``--cutoff``), or an expert-scored table
of (reference, candidate) reports scored offline (report side + Logic). The trust is the
fusion's, under fixed weights (the defaults, or ``--config``'s): fitting the weights on the
same rows would spend the guarantee, so no weight search runs. The thresholds come from
:mod:`pathgls.meta.certify`; the certificate (:mod:`pathgls.meta.certificate`) is written into
the fusion config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from pathgls.errors import CalibrationError


@dataclass
class CertRows:
    """Labelled rows ready to certify: module scores, 0/1 acceptable, where they came from."""

    ids: list[str]
    scores: list[dict[str, float | None]]
    acceptable: list[int]
    labels: str
    subjects: set[str] = field(default_factory=set)
    organs: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)


def _expert_rows(source: Path, *, cutoff: float | None, score_column: str) -> CertRows:
    from pathgls.meta.expert_rows import score_expert_table

    if cutoff is None:
        raise CalibrationError(
            f"{source} holds expert scores: pass --cutoff (acceptable = score ≥ cut-off)"
        )
    rows = score_expert_table(source, score_column=score_column)
    return CertRows(
        ids=[r.item_id for r in rows],
        scores=[r.scores for r in rows],
        acceptable=[int(r.expert >= cutoff) for r in rows],
        labels=f"{source.name}: {score_column} ≥ {cutoff:g}",
        subjects={f"expert table {source.name}"},
        organs={r.organ for r in rows if r.organ},
    )


def _run_rows(source: Path, *, labels: Path, cutoff: float | None, acceptable: float) -> CertRows:
    from pathgls.inspect.review_page import card_id
    from pathgls.meta.calibrate import calibrated_modules, read_labels
    from pathgls.meta.expert_rows import report_organ
    from pathgls.meta.labels import expert_labels, is_review_table, read_review_labels
    from pathgls.runner.store import ResultsStore
    from pathgls.text import build_extractor

    cards = [c for _, c, _ in ResultsStore(source).iter_cards() if c is not None]
    if not cards:
        raise CalibrationError(f"{source}: no readable ScoreCard")
    by_id = {card_id(c): c for c in cards}
    notes: list[str] = []
    if is_review_table(labels):
        lab = read_review_labels(labels)
        values, how = lab.values, lab.source
        notes += lab.notes()
        notes.append(
            "labels from pathgls review cover the cards a gate sent to review, not a random "
            "sample of the run: a certificate from them holds for reports like those; label a "
            "random sample of reports to certify for all of them"
        )
    elif cutoff is not None:
        lab = expert_labels(labels, cutoff=cutoff, id_columns=("item_id",))
        values, how = lab.values, lab.source
    else:
        raw = read_labels(labels)
        values = {}
        for c in cards:
            v = raw.get((c.subject, c.item_id), raw.get((None, c.item_id)))
            if v is not None:
                values[card_id(c)] = 1.0 if v >= acceptable else 0.0
        how = f"{labels.name}: label ≥ {acceptable:g}"
    unknown = sorted(k for k in values if k not in by_id and k not in {c.item_id for c in cards})
    if unknown:
        notes.append(
            f"{len(unknown)} label(s) for no card of this run, ignored: "
            + ", ".join(unknown[:5])
            + (" …" if len(unknown) > 5 else "")
        )
    out = CertRows([], [], [], how, notes=notes)
    extractor = build_extractor("lexicon")
    modules = calibrated_modules()
    for cid, c in by_id.items():
        v = values.get(cid, values.get(c.item_id))
        if v is None or c.status == "failed":
            continue
        out.ids.append(cid)
        out.scores.append({m: c.value(m) for m in modules})
        out.acceptable.append(int(v >= 0.5))
        out.subjects.add(c.subject)
        text = c.reports["original"].text if "original" in c.reports else ""
        if (organ := report_organ(text, extractor)) is not None:
            out.organs.add(organ)
    if not out.ids:
        raise CalibrationError(f"no card of {source} has a label in {labels}")
    return out


def _table_rows(source: Path, *, acceptable: float) -> CertRows:
    from pathgls.meta.calibrate import read_validation_table

    rows = read_validation_table(source)
    return CertRows(
        ids=[r.item_id for r in rows],
        scores=[dict(r.scores) for r in rows],
        acceptable=[int(r.label >= acceptable) for r in rows],
        labels=f"{source.name}: label ≥ {acceptable:g}",
    )


def load_cert_rows(
    source: Path,
    *,
    labels: Path | None,
    cutoff: float | None,
    score_column: str,
    acceptable: float,
) -> CertRows:
    """The labelled rows of any source ``calibrate --risk`` accepts.

    Raises:
        CalibrationError: a source or labels that cannot be read or joined.
    """
    from pathgls.meta.expert_rows import is_expert_table

    if source.is_dir():
        if labels is None:
            raise CalibrationError(f"{source} is a run directory: pass --labels")
        return _run_rows(source, labels=labels, cutoff=cutoff, acceptable=acceptable)
    if labels is not None:
        raise CalibrationError(f"--labels goes with a run directory; {source} is a table")
    if is_expert_table(source, score_column=score_column):
        return _expert_rows(source, cutoff=cutoff, score_column=score_column)
    return _table_rows(source, acceptable=acceptable)


def trusts(rows: CertRows, weights: dict[str, float]) -> tuple[list[float], list[int], int]:
    """Each row's trust under ``weights`` (renormalised over its modules); rows without any
    weighted module are dropped (their count returned)."""
    out_t, out_a, dropped = [], [], 0
    for scores, ok in zip(rows.scores, rows.acceptable, strict=True):
        have = {
            m: float(v)
            for m, v in scores.items()
            if v is not None and math.isfinite(float(v)) and weights.get(m, 0) > 0
        }
        total = sum(weights[m] for m in have)
        if total <= 0:
            dropped += 1
            continue
        out_t.append(sum(weights[m] * v for m, v in have.items()) / total)
        out_a.append(ok)
    return out_t, out_a, dropped


@dataclass
class RunTrust:
    """The run a run-mode certificate is for: its trust values and who it is."""

    folder: str
    trust: list[float]
    digest: str
    left_out: int  # cards without a weighted module score (the gate cannot deploy them)
    ids: list[str]  # the card ids (subject/item_id) of the reports certified for


def run_trust(run_dir: Path, weights: dict[str, float]) -> RunTrust:
    """The trust of each report of ``run_dir`` under ``weights`` (cards that failed left out).

    Raises:
        CalibrationError: not a run directory with a readable ScoreCard.
    """
    from pathgls.inspect.review_page import card_id
    from pathgls.meta.calibrate import calibrated_modules
    from pathgls.meta.certificate import card_digest
    from pathgls.runner.store import ResultsStore

    if not run_dir.is_dir():
        raise CalibrationError(f"--for-run {run_dir}: not a run directory")
    cards = [c for _, c, _ in ResultsStore(run_dir).iter_cards() if c is not None]
    done = [c for c in cards if c.status != "failed"]
    if not done:
        raise CalibrationError(f"--for-run {run_dir}: no ScoreCard with a report to gate")
    modules = calibrated_modules()
    rows = CertRows([], [{m: c.value(m) for m in modules} for c in done], [0] * len(done), "")
    trust, _, dropped = trusts(rows, weights)
    if not trust:
        raise CalibrationError(f"--for-run {run_dir}: no card has a weighted module score")
    return RunTrust(str(run_dir), trust, card_digest(done), dropped, [card_id(c) for c in done])


def gate_thresholds(deploy: Any, reject: Any) -> dict[str, float]:
    """``[gate]`` of the certified config: only certified thresholds, and review = 0 when the
    deploy threshold falls below the gate's default review threshold with no certified reject
    threshold (nothing is rejected without a certificate for it)."""
    from pathgls.config import GateConfig

    gate: dict[str, float] = {}
    if deploy.certified:
        gate["deploy"] = deploy.threshold
    if reject is not None and reject.certified:
        gate["review"] = reject.threshold
    elif deploy.certified and deploy.threshold < GateConfig().review:
        gate["review"] = 0.0
    return gate


def certified_toml(*, weights: dict[str, float], deploy: Any, reject: Any, source: Path) -> str:
    """The fusion config with certified thresholds (only those certified) and certificates."""
    import tomli_w

    gate = gate_thresholds(deploy, reject)
    data: dict[str, Any] = {"fusion": {"weights": weights}}
    if gate:
        data["gate"] = gate
    cal: dict[str, Any] = {"source": str(source), "certificate": deploy.to_toml()}
    if reject is not None:
        cal["reject_certificate"] = reject.to_toml()
    data["calibration"] = cal
    head = "# written by pathgls calibrate --risk; use with: pathgls gate RUN_DIR --config FILE\n"
    if not deploy.certified:
        head += "# no deploy threshold could be certified: none is written (see the certificate)\n"
    return head + tomli_w.dumps(data)


def print_certificate(cert: Any, console: Console) -> None:
    """The certificate, one fact a line; refused ones in red."""
    colour = "green" if cert.certified else "red"
    lines = cert.lines()
    console.print(f"[{colour}]{escape(lines[0])}[/]", soft_wrap=True)
    for line in lines[1:]:
        console.print(f"  {escape(line)}", soft_wrap=True)


def run_certified(
    *,
    source: Path,
    labels: Path | None,
    cutoff: float | None,
    score_column: str,
    acceptable: float,
    risk: float,
    confidence: float,
    batch: int | None,
    reject_risk: float | None,
    weights: dict[str, float],
    out: Path | None,
    console: Console,
    for_run: Path | None = None,
) -> None:
    """Certify, print the certificates, write the config (when ``out``).

    Raises:
        CalibrationError: bad rows or labels, or no usable row.
        ConfigError: the certified thresholds do not make a valid gate.
        OSError: ``out`` cannot be written.
    """
    from pathgls.meta.certificate import Certificate, module_coverage
    from pathgls.meta.certify import CertifyConfig, certify_deploy, certify_for_run, certify_reject

    rows = load_cert_rows(
        source, labels=labels, cutoff=cutoff, score_column=score_column, acceptable=acceptable
    )
    for note in rows.notes:
        console.print(f"[yellow]warning:[/] {escape(note)}", soft_wrap=True)
    total = sum(weights.values())
    weights = {m: round(w / total, 6) for m, w in weights.items()}
    trust, ok, dropped = trusts(rows, weights)
    if dropped:
        console.print(f"[yellow]warning:[/] {dropped} row(s) without a weighted module left out")
    if not trust:
        raise CalibrationError("no labelled row has a weighted module score")
    if not any(ok):
        console.print(
            f"[yellow]hint:[/] no row is acceptable ({escape(rows.labels)}); for 0/1 labels "
            "pass --acceptable 1, for expert scores --cutoff",
            soft_wrap=True,
        )
    meta: dict[str, Any] = {
        "labels": rows.labels,
        "subjects": rows.subjects,
        "organs": rows.organs,
        "coverage": module_coverage(rows.scores),
        "weights": weights,
    }
    if for_run is not None and for_run.resolve() == source.resolve():
        raise CalibrationError(
            f"--for-run {for_run} is the run the labels come from: its labelled reports cannot "
            "vouch for themselves. Label a random sample of another run's reports (or of this "
            "kind) and certify for this one"
        )
    target = None if for_run is None else run_trust(for_run, weights)
    if target is not None:
        shared = set(target.ids) & set(rows.ids)
        if shared:
            console.print(
                f"[yellow]warning:[/] {len(shared)} report(s) of {escape(target.folder)} have the "
                "id of a calibration row (e.g. "
                f"{escape(sorted(shared)[0])}): if they are the same reports the guarantee does "
                "not hold (it needs the labelled and the run's reports to be different draws of "
                "one kind)",
                soft_wrap=True,
            )
        meta.update(run=target.folder, run_cards=target.digest)
        if target.left_out:
            console.print(
                f"[yellow]warning:[/] {target.left_out} report(s) of {escape(target.folder)} "
                "without a weighted module score left out (the gate cannot deploy them)",
                soft_wrap=True,
            )

    def certify(side: str, share: float) -> Any:
        cfg = CertifyConfig(risk=share, confidence=confidence, batch=batch)
        if target is not None:
            return certify_for_run(
                trust=trust, acceptable=ok, run_trust=target.trust, config=cfg, side=side
            )
        fn = certify_deploy if side == "deploy" else certify_reject
        return fn(trust=trust, acceptable=ok, config=cfg)

    dep = certify("deploy", risk)
    deploy = Certificate.from_result(dep, **meta)
    reject = None
    if reject_risk is not None:
        rej = certify("reject", reject_risk)
        if (
            dep.threshold is not None
            and rej.threshold is not None
            and rej.threshold > dep.threshold
        ):
            why = (
                f"the certified reject threshold {rej.threshold:.3f} is above the deploy "
                f"threshold {dep.threshold:.3f}"
            )
            rej = replace(rej, threshold=None, bound=None, rate=0.0, reason=why)
        reject = Certificate.from_result(rej, **meta)
    from pathgls.config import GateConfig

    needed = [
        r for r in GateConfig().required if not any(m in meta["coverage"] for m in r.split("|"))
    ]
    if needed:
        console.print(
            f"[yellow]note:[/] the gate deploys only with {', '.join(needed)} scored (\\[gate] "
            "required) and no calibration row has it: gate these reports with --require "
            "naming what they have (e.g. --require 'grounding|report')",
            soft_wrap=True,
        )
    stdout = Console()
    stdout.print(
        f"{len(trust)} labelled rows, {sum(ok)} acceptable; trust = fusion under fixed weights "
        f"({', '.join(f'{m} {w:g}' for m, w in weights.items())}); no weight search "
        "(fitting on these rows would spend the guarantee)",
        soft_wrap=True,
    )
    for cert in (deploy, reject):
        if cert is not None:
            print_certificate(cert, stdout)
    if out is None:
        return
    from pathgls.config import config_from_dict
    from pathgls.errors import ConfigError
    from pathgls.io.atomic import write_text_atomic

    gate = gate_thresholds(deploy, reject)
    if "review" in gate and not (reject is not None and reject.certified):
        console.print(
            f"[yellow]note:[/] the certified deploy threshold {deploy.threshold:.3f} is below the "
            "gate's review threshold and no reject threshold is certified: review = 0 is written, "
            "so every report below the deploy threshold goes to review (none is rejected)",
            soft_wrap=True,
        )
    try:
        config_from_dict({"fusion": {"weights": weights}, "gate": gate})
    except ConfigError as e:
        raise ConfigError(f"cannot write this gate: {e}") from e
    write_text_atomic(
        out, certified_toml(weights=weights, deploy=deploy, reject=reject, source=source)
    )
    if not deploy.certified:
        console.print(
            "[yellow]warning:[/] no deploy threshold written: the gate's own deploy threshold "
            "carries no guarantee",
            soft_wrap=True,
        )
    console.print(f"wrote {escape(str(out))}", soft_wrap=True)
