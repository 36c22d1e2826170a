"""The certificate panel of the HTML run report (beside the gate table)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathgls.errors import ConfigError, RunReportError
from pathgls.types import ScoreCard


def certificate_panel(config: Path, cards: list[ScoreCard]) -> dict[str, Any]:
    """``certificates`` (each: certified, lines) and ``certificate_warnings`` for the template.

    A config without a certificate is shown as one uncertified line.

    Raises:
        RunReportError: the config cannot be read.
    """
    from pathgls.meta.certificate import (
        card_digest,
        drift_warnings,
        read_certificates,
        run_profile,
    )

    try:
        certs = read_certificates(config)
    except ConfigError as e:
        raise RunReportError(f"cannot read the certificate of {config}: {e}") from e
    if not certs:
        line = f"no certificate in {config.name}: the gate's thresholds carry no guarantee"
        return {"certificates": [{"certified": False, "lines": [line]}], "certificate_warnings": []}
    subjects, organs, coverage = run_profile(cards)
    return {
        "certificates": [{"certified": c.certified, "lines": c.lines()} for c in certs],
        "certificate_warnings": drift_warnings(
            certs[0],
            subjects=subjects,
            organs=organs,
            coverage=coverage,
            run_cards=card_digest(cards),
        ),
    }
