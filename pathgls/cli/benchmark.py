"""``pathgls benchmark`` (slide folders × subjects, resumable) and ``pathgls evaluate``."""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from pathgls.cli.common import fail, progress_bar, run_logging
from pathgls.errors import PathGLSError
from pathgls.io.redact import redact
from pathgls.io.sanitize import markup_text as escape

Arg = typer.Argument
Opt = typer.Option

SubjectOpt = Annotated[
    list[str] | None,
    Opt(
        "--subject",
        help="Model under test (repeatable; replaces the config's run.subjects): captioner, "
        "captioner-obedient, openai:<url>#<model>, hf:<repo-or-dir>, replay:<jsonl>.",
    ),
]
EncoderOpt = Annotated[
    str | None,
    Opt(
        help="Image-text encoder for grounding (plip, quiltnet, conch, hf:<dir>); 'none': no "
        "S_g. Default: the config's encoder.name, else none."
    ),
]
ViewOpt = Annotated[
    str | None, Opt(help="What a subject sees of a slide: thumbnail (default), montage, patches.")
]
AttackOpt = Annotated[
    str | None, Opt(help="Adversarial prompt of the attack condition (false-malignant-history).")
]
SeedOpt = Annotated[int | None, Opt(help="Generation and stain seed (default 0).")]
MppOpt = Annotated[float | None, Opt(help="Level-0 µm/px for slides without resolution metadata.")]
NliOpt = Annotated[str | None, Opt(help="NLI for the Logic score: rules (default) or hf:<dir>.")]
ConfigOpt = Annotated[
    Path | None,
    Opt(
        help="TOML config with any of its sections (run, models, encoder, logic, fusion, ...); "
        "a run's OUT/config.toml repeats that run. The options given here win."
    ),
]
TimeoutOpt = Annotated[
    float | None, Opt(help="Seconds one subject request may take (openai; default 120).")
]
RetriesOpt = Annotated[int | None, Opt(help="Retries of a failed subject request (openai; 3).")]
VerifyOpt = Annotated[
    bool,
    Opt(
        "--verify",
        help="Hash every slide in full to check its finished ScoreCards, patches file and "
        "feature bags, even when its size, mtime and header are unchanged.",
    ),
]


def _config_file(path: Path | None) -> None:
    from pathgls.cli.preflight import config_file

    config_file(path)


def register(app: typer.Typer) -> None:
    """Add ``benchmark`` and ``evaluate`` to ``app``."""
    app.command("benchmark")(benchmark)
    app.command("evaluate")(evaluate)


def build_run_config(
    *,
    config: Path | None = None,
    subjects: list[str] | None = None,
    encoder: str | None = None,
    view: str | None = None,
    attack: str | None = None,
    seed: int | None = None,
    mpp: float | None = None,
    nli: str | None = None,
    subject_timeout: float | None = None,
    subject_retries: int | None = None,
    executor: str | None = None,
    address: str | None = None,
    workers: int | None = None,
    verify: bool = False,
) -> Any:
    """The run's :class:`~pathgls.config.PathGLSConfig`: the config file, then the options given.

    An option left out (None) keeps the file's value, or the default; ``--subject`` replaces
    the file's subjects; ``--encoder none`` runs without an encoder whatever the file says.

    Raises:
        ConfigError: an invalid option or config file, or a config that cannot run.
    """
    import dataclasses

    from pathgls.config import load_config, validate_run
    from pathgls.io.redact import refuse_masked_secrets

    no_encoder = encoder is not None and encoder.strip().lower() == "none"
    cfg = load_config(
        config,
        run={
            "subjects": tuple(subjects) if subjects else None,
            "attack": attack,
            "seed": seed,
            "mpp": mpp,
            "executor": executor,
            "address": address,
            "workers": workers,
            "verify": True if verify else None,
        },
        models={"nli": nli},
        encoder={"name": None if no_encoder else encoder},
        view={"kind": view},
        subject={"timeout_s": subject_timeout, "max_retries": subject_retries},
    )
    if no_encoder:
        cfg = dataclasses.replace(cfg, encoder=dataclasses.replace(cfg.encoder, name=None))
    validate_run(cfg)
    refuse_masked_secrets(subjects=cfg.run.subjects, address=cfg.run.address)
    return cfg


def execute(
    *,
    source: Path,
    run_config: Any,
    out: Path,
    console: Console,
    references: Path | None = None,
    wait: bool = False,
) -> Any:
    """Run with a progress bar and the run log; returns the :class:`RunResult`.

    ``wait``: when another run holds ``out``, wait for it instead of refusing.
    """
    from pathgls.runner.run import run_benchmark
    from pathgls.runner.store import OWN_ENTRIES

    with (
        _sigterm_interrupts(),
        run_logging(out, "benchmark", inputs=[source], own=OWN_ENTRIES),
        progress_bar(console) as bar,
    ):
        task = bar.add_task("starting", total=None)

        def progress(item: Any, cards: list[Any], done: int, todo: int) -> None:
            bar.update(task, completed=done, total=todo, description=escape(item.item_id))
            for card in cards:
                log_card(card, done=done, todo=todo)

        return run_benchmark(
            source=source,
            config=run_config,
            out=out,
            references=references,
            progress=progress,
            wait_s=None if wait else 0.0,
        )


def log_card(card: Any, *, done: int, todo: int) -> None:
    """One line per finished card in the run log (its errors and warnings on their own)."""
    log = logging.getLogger("pathgls.cli.benchmark")
    trust = "–" if card.trust is None else f"{card.trust:.3f}"
    route = card.decision.route if card.decision is not None else card.status
    values = ", ".join(
        f"{name} {'missing' if m.value is None else f'{m.value:.3f}'}"
        for name, m in sorted(card.modules.items())
    )
    log.info(
        "[%d/%d] %s · %s: %s, trust %s → %s (%s)",
        done,
        todo,
        card.item_id,
        redact(card.subject),
        card.status,
        trust,
        route,
        values or "no module",
    )
    for error in card.errors:
        log.error("%s · %s: %s", card.item_id, redact(card.subject), error.splitlines()[0])
    for warning in card.warnings:
        log.warning("%s · %s: %s", card.item_id, redact(card.subject), warning)


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a scheduler stopping the job) ends the run like Ctrl-C: the manifest says so."""

    def interrupt(signum: int, _: Any) -> None:
        raise KeyboardInterrupt(f"received {signal.Signals(signum).name}")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def report_run(result: Any, console: Console) -> None:
    """The subject comparison, failures and where the files are."""
    from pathgls.cli.layout import is_compact
    from pathgls.runner.summary import print_summary

    out = Console()
    print_summary(result.summary, console=out, compact=is_compact(out))
    from pathgls.cli.common import RANDOM_MARK, random_weight_modules

    random = sorted({c.subject for c in result.cards if random_weight_modules(c)})
    if random:  # the summary's numbers for these subjects are wiring checks, not results
        Console().print(
            f"[red]{RANDOM_MARK}:[/] grounding, and so the trust, of {escape(', '.join(random))} "
            "was computed with a random-weight test encoder: it proves the wiring only, it is "
            "not a result",
            soft_wrap=True,
        )
    for warning in getattr(result, "warnings", ()):
        console.print(f"[yellow]warning:[/] {escape(redact(warning))}", soft_wrap=True)
    c = result.counts
    console.print(
        f"{result.planned} item × subject pairs: {c.get('ok', 0)} ok, {c.get('partial', 0)} "
        f"partial, {c.get('failed', 0)} failed ({result.skipped} already done, skipped)"
    )
    errors = result.run_dir / "errors.jsonl"
    if c.get("failed") or c.get("partial"):
        console.print(f"[yellow]failures and their reasons:[/] {escape(str(errors))}")
    console.print(f"time {escape(result.timings.headline())} (per item and stage: logs/)")
    console.print(f"results: {escape(str(result.run_dir))} (scorecards/, summary.csv, plots/)")


#: Where runs go when ``--out`` is not given: ``runs/<name of SLIDES>``.
RUNS_DIR = Path("runs")


def default_run_dir(source: Path) -> Path:
    """``runs/<source name>`` (``runs/slides`` for ``slides/``, ``runs/x`` for ``x.svs``)."""
    name = source.resolve().stem if source.name in ("", ".", "..") else source.stem
    return RUNS_DIR / (name or "run")


def check_run_inputs(
    *, source: Path, run_config: Any, out: Path | None, references: Path | None = None
) -> list[str]:
    """What a run reads and builds, checked before any heavy import; returns warnings (items a
    replay subject has no usable record for).

    Raises:
        PathGLSError: a missing or empty slide source, a file that is no slide, a bad
            references table, a folder of runs as ``out``, an unknown subject or encoder, a
            model not pulled, a replay file with no usable record for any item.
    """
    from pathgls.cli import preflight
    from pathgls.cli.input_checks import check_replay_subjects
    from pathgls.io.rundirs import check_new_run_dir

    preflight.slides_source(source)
    recorded = getattr(run_config.run, "references", None)
    if references is None and recorded is not None:
        references = Path(recorded)  # a repeated run's recorded references file
    if references is not None:
        preflight.text_file(references, what="references table")
    if out is not None:
        check_new_run_dir(out)
    preflight.check_run_config(run_config)
    return check_replay_subjects(source=source, subjects=run_config.run.subjects)


def benchmark(
    slides: Annotated[Path, Arg(help="A slide/ROI file or a folder searched recursively.")],
    out: Annotated[
        Path | None,
        Opt(help="Run directory (created; a rerun resumes it). Default: runs/<SLIDES name>."),
    ] = None,
    subject: SubjectOpt = None,
    encoder: EncoderOpt = None,
    executor: Annotated[str | None, Opt(help="local (default) or ray.")] = None,
    address: Annotated[
        str | None, Opt(help="Ray cluster address (default: start a local Ray).")
    ] = None,
    workers: Annotated[int | None, Opt(help="Ray workers (default: one per CPU/GPU).")] = None,
    references: Annotated[
        Path | None,
        Opt(
            help="TSV item_id<TAB>reference: items with a reference get the report-side "
            "module ([report] backend, default dxalign) fused into their trust, and HARE."
        ),
    ] = None,
    view: ViewOpt = None,
    attack: AttackOpt = None,
    seed: SeedOpt = None,
    mpp: MppOpt = None,
    nli: NliOpt = None,
    config: ConfigOpt = None,
    subject_timeout: TimeoutOpt = None,
    subject_retries: RetriesOpt = None,
    wait: Annotated[
        bool, Opt(help="When another run is using OUT, wait for it instead of refusing.")
    ] = False,
    verify: VerifyOpt = False,
) -> None:
    """Score every slide with every subject: Grounding, Logic, Stability, trust, gate, HARE.

    Each (slide, subject) gets a ScoreCard in OUT/scorecards/; a rerun skips finished ones.
    Bad slides and failing subjects are recorded with their reasons; the others complete.
    OUT/config.toml is the complete effective config: `--config OUT/config.toml` repeats the run.
    Exits 1 when no item at all could be evaluated, 2 on a usage or model error.
    """
    console = Console(stderr=True)
    out = out if out is not None else default_run_dir(slides)
    try:
        _config_file(config)
        run_config = build_run_config(
            config=config,
            subjects=subject,
            encoder=encoder,
            view=view,
            attack=attack,
            seed=seed,
            mpp=mpp,
            nli=nli,
            subject_timeout=subject_timeout,
            subject_retries=subject_retries,
            executor=executor,
            address=address,
            workers=workers,
            verify=verify,
        )
        for warning in check_run_inputs(
            source=slides, run_config=run_config, out=out, references=references
        ):
            console.print(f"[yellow]warning:[/] {escape(redact(warning))}", soft_wrap=True)
        result = execute(
            source=slides,
            run_config=run_config,
            out=out,
            console=console,
            references=references,
            wait=wait,
        )
    except PathGLSError as e:
        fail(console, e)
    report_run(result, console)
    if result.planned and not (result.counts.get("ok") or result.counts.get("partial")):
        console.print("[red]no item could be evaluated[/] (see the errors log)")
        raise typer.Exit(1)


def evaluate(
    item: Annotated[Path, Arg(help="A slide or an ROI image.")],
    subject: SubjectOpt = None,
    encoder: EncoderOpt = None,
    out: Annotated[
        Path | None, Opt(help="Keep bag, caches and the card here (default: a temporary folder).")
    ] = None,
    reference: Annotated[
        Path | None,
        Opt(
            help="A reference report (text file): adds the report-side module (fused into "
            "the trust) and HARE."
        ),
    ] = None,
    view: ViewOpt = None,
    attack: AttackOpt = None,
    seed: SeedOpt = None,
    mpp: MppOpt = None,
    nli: NliOpt = None,
    config: ConfigOpt = None,
    subject_timeout: TimeoutOpt = None,
    subject_retries: RetriesOpt = None,
) -> None:
    """Evaluate one slide or ROI and print its ScoreCard(s) as JSON (local executor)."""
    console = Console(stderr=True)
    if not item.is_file():
        fail(console, f"{item}: no such file")
    cards: list[Any] = []
    try:
        _config_file(config)
        if reference is not None:
            from pathgls.cli.preflight import text_file

            text_file(reference, what="reference report")
        run_config = build_run_config(
            config=config,
            subjects=subject,
            encoder=encoder,
            view=view,
            attack=attack,
            seed=seed,
            mpp=mpp,
            nli=nli,
            subject_timeout=subject_timeout,
            subject_retries=subject_retries,
        )
        for warning in check_run_inputs(source=item, run_config=run_config, out=out):
            console.print(f"[yellow]warning:[/] {escape(redact(warning))}", soft_wrap=True)
        from pathgls.runner.single import evaluate_single, read_reference_file

        cards = evaluate_single(
            source=item,
            config=run_config,
            reference=None if reference is None else read_reference_file(reference),
            out=out,
        )
    except PathGLSError as e:
        fail(console, e)
    payload = [c.to_dict() for c in cards]
    typer.echo(redact(json.dumps(payload[0] if len(payload) == 1 else payload, indent=2)))
    for c in cards:
        route = c.decision.route if c.decision else c.status
        trust = "missing" if c.trust is None else f"{c.trust:.3f}"
        shown = escape(redact(c.subject))
        console.print(f"{escape(c.item_id)} · {shown}: trust {trust} → {route}")
        for err in c.errors:
            console.print(f"  [red]error:[/] {escape(redact(err.splitlines()[0]))}", soft_wrap=True)
    if any(c.status == "failed" for c in cards):
        raise typer.Exit(1)
