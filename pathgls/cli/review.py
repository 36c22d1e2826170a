"""``pathgls review RUN``: a local page that walks a reviewer through the run's *review* cards.

The cards are :func:`pathgls.inspect.review_page.review_cards` (worst first); the server is
:mod:`pathgls.inspect.review_server` (127.0.0.1 only); labels go to ``RUN/labels.tsv`` as they
are given, the file ``pathgls calibrate RUN --labels RUN/labels.tsv --risk …`` reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from pathgls.cli.common import fail
from pathgls.errors import PathGLSError
from pathgls.io.rundirs import check_run_dir

Arg = typer.Argument
Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add ``review`` to ``app``."""
    app.command("review")(review)


def review(
    run: Annotated[Path, Arg(help="Run directory (of `pathgls benchmark` or `pathgls demo`).")],
    port: Annotated[int, Opt(help="Port on 127.0.0.1 (0: a free one, printed).")] = 8765,
    config: Annotated[
        Path | None,
        Opt(help="Gate config that decides the review route (default: the run's config.toml)."),
    ] = None,
    reviewer: Annotated[
        str | None, Opt(help="Reviewer name written with each label (default: $USER).")
    ] = None,
) -> None:
    """Serve the review page on 127.0.0.1 until Ctrl-C; labels go to RUN/labels.tsv."""
    console = Console(stderr=True)
    try:
        check_run_dir(run)
        if config is not None:
            from pathgls.cli.preflight import config_file

            config_file(config)
        from pathgls.inspect.review_page import review_cards
        from pathgls.inspect.review_server import ReviewSite, default_reviewer, make_server

        cards = review_cards(run_dir=run, config=config)
        site = ReviewSite(
            run_dir=run,
            cards=cards,
            title=f"pathgls review — {run.resolve().name}",
            reviewer=reviewer or default_reviewer(),
        )
        server = make_server(site, port=port)
    except PathGLSError as e:
        fail(console, e)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    Console().print(f"review page: {url}", soft_wrap=True)
    console.print(
        f"{len(cards)} card(s) to review; labels → {escape(str(run / 'labels.tsv'))}; "
        "Ctrl-C stops the server",
        soft_wrap=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        server.server_close()
