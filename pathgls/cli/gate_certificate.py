"""The certificate beside the gate: ``pathgls gate --config`` prints what the thresholds guarantee
and warns when the run is not like the rows they were certified on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from pathgls.errors import ConfigError
from pathgls.types import ScoreCard


def show_certificates(config: Path, cards: Sequence[ScoreCard], console: Console) -> None:
    """Print the config's certificates (none: say the thresholds carry no guarantee) and the
    ways the run differs from the calibration rows."""
    from pathgls.meta.certificate import (
        card_digest,
        drift_warnings,
        read_certificates,
        run_profile,
    )

    try:
        certs = read_certificates(config)
    except ConfigError as e:
        console.print(f"[yellow]warning:[/] certificate unreadable: {escape(str(e))}")
        return
    if not certs:
        console.print(
            f"no certificate in {escape(str(config))}: the thresholds carry no guarantee "
            "(pathgls calibrate --risk writes one)",
            soft_wrap=True,
        )
        return
    subjects, organs, coverage = run_profile(cards)
    for cert in certs:
        lines = cert.lines()
        colour = "green" if cert.certified else "red"
        console.print(f"[{colour}]{escape(lines[0])}[/]", soft_wrap=True)
        for line in lines[1:]:
            console.print(f"  {escape(line)}", soft_wrap=True)
    notes = drift_warnings(
        certs[0],
        subjects=subjects,
        organs=organs,
        coverage=coverage,
        run_cards=card_digest(cards),
    )
    for note in notes:
        console.print(f"[yellow]warning:[/] {escape(note)}", soft_wrap=True)
