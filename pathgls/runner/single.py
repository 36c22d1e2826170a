"""One slide or ROI evaluated in this process: what ``pathgls evaluate`` runs.

The same run a benchmark folder gets — :func:`~pathgls.runner.items.discover`, the run's
store and :func:`~pathgls.runner.local.run_local` — for one item, with its reference report
read from a text file the way every report is read. The command line only checks its
arguments, prints the cards and sets the exit code.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path
from typing import Any

from pathgls.config import PathGLSConfig
from pathgls.types import ScoreCard


def read_reference_file(path: str | os.PathLike[str]) -> str:
    """A reference report from a text file: size-capped, decoded and cleaned like a report.

    Raises:
        NotTextError, InputTooLargeError: not a text file, or larger than the text cap.
    """
    from pathgls.io.sniff import read_text_bytes
    from pathgls.text.clean import clean_report

    text, _ = clean_report(read_text_bytes(path, what="reference report"))
    return text


def evaluate_single(
    *,
    source: str | os.PathLike[str],
    config: PathGLSConfig,
    reference: str | None = None,
    out: str | os.PathLike[str] | None = None,
) -> list[ScoreCard]:
    """The cards of one slide or ROI, one per subject of ``config``, in subject order.

    Args:
        source: A slide or an ROI image.
        config: The run's config (subjects, models, view, attack, seed, ...).
        reference: The item's reference report (adds the report-side module and HARE).
        out: Keep the bag, caches and cards here (checked like a run folder); None: a
            temporary folder, removed afterwards.

    Raises:
        PathGLSError: the source, the folder or a model cannot be used (before any card).
    """
    from pathgls.runner.items import discover
    from pathgls.runner.local import run_local
    from pathgls.runner.store import ResultsStore

    (work,) = discover(source)
    if reference is not None:
        work = dataclasses.replace(work, reference=reference)
    if out is not None:
        from pathgls.io.rundir import check_out_dir, refuse_links
        from pathgls.runner.store import OWN_ENTRIES

        check_out_dir(Path(out))
        refuse_links(Path(out), OWN_ENTRIES, what=f"--out {out}")
    cards: list[ScoreCard] = []
    with tempfile.TemporaryDirectory(prefix="pathgls-evaluate-") as tmp:
        store = ResultsStore(out if out is not None else tmp)

        def keep(_: Any, result: list[ScoreCard]) -> None:
            for card in result:
                if out is not None:
                    store.write_card(card)
                cards.append(card)

        run_local(
            tasks=[(work, list(config.run.subjects))],
            config=config,
            store=store,
            on_result=keep,
        )
    return cards
