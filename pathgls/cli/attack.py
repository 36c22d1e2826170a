"""``pathgls attack stain`` and ``pathgls stability``: the Stability module on the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from pathgls.cli import preflight
from pathgls.cli.common import fail
from pathgls.errors import ConfigError, PathGLSError
from pathgls.io.sanitize import markup_text as escape

Opt = typer.Option
#: Where ``attack stain`` writes when ``--out`` is not given.
ATTACK_DIR = Path("runs") / "attack"
attack_app = typer.Typer(no_args_is_help=True, help="Attacks on the subject model.")


def register(app: typer.Typer) -> None:
    """Add ``attack`` (group) and ``stability`` to ``app``."""
    app.add_typer(attack_app, name="attack")
    app.command("stability")(stability)


@attack_app.command("stain")
def stain(
    image: Annotated[Path, typer.Argument(help="An RGB image (PNG/JPEG/TIFF).")],
    out: Annotated[
        Path | None,
        Opt(
            help="Where to write the perturbed PNG (default runs/attack/<image>-stain-<seed>.png)."
        ),
    ] = None,
    seed: Annotated[
        int | None, Opt(help="Seed of the H and E scale factors (default: run.seed, 0).")
    ] = None,
    image_id: Annotated[
        str | None, Opt(help="Id that, with the seed, decides the factors (default: file name).")
    ] = None,
    config: Annotated[
        Path | None, Opt(help="TOML config: its stain section (factor range, Macenko).")
    ] = None,
) -> None:
    """Macenko stain perturbation: H and E concentrations scaled by seeded U(0.7, 1.3) factors."""
    from pathgls.config import load_config

    console = Console(stderr=True)
    try:
        preflight.config_file(config)
        preflight.image_file(image, what="image")
        cfg = load_config(config, run={"seed": seed})
        seed = cfg.run.seed
    except PathGLSError as e:
        fail(console, e)
    out = out if out is not None else ATTACK_DIR / f"{image.stem}-stain-{seed}.png"
    import numpy as np

    from pathgls.attacks.stain import perturb_stain
    from pathgls.grounding.sources import load_roi_image
    from pathgls.inspect.viz import save_png

    try:
        img = load_roi_image(image)
        res = perturb_stain(
            images=img, image_ids=image_id or image.name, seed=seed, config=cfg.stain
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        assert isinstance(res.images, np.ndarray)  # like the input: a numpy image
        save_png(out, res.images)
    except PathGLSError as e:
        fail(console, e)
    except OSError as e:
        fail(console, f"cannot write {out}: {e.strerror or e}")
    f = res.factors[0].tolist()
    from pathgls.attacks.stain_kind import stain_kind

    warning = stain_kind(img).warning
    if warning:
        console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    if not bool(res.transformed[0]):
        console.print(f"[yellow]unchanged:[/] {escape(str(res.flags[0]))}", soft_wrap=True)
    console.print(f"H × {f[0]:.3f}, E × {f[1]:.3f} (seed {seed}) → {out}")


def stability(
    subject: Annotated[
        str | None,
        Opt(help="openai:<url>#<model>, hf:<dir>, replay:<jsonl>, captioner (or run.subjects)."),
    ] = None,
    image: Annotated[Path | None, Opt(help="An ROI image.")] = None,
    slide: Annotated[
        Path | None, Opt(help="A slide (with --bag for montage/patches views).")
    ] = None,
    bag: Annotated[Path | None, Opt(help="The slide's feature bag.")] = None,
    view: Annotated[
        str | None, Opt(help="Slide view: thumbnail (default), montage or patches.")
    ] = None,
    attack: Annotated[
        str | None, Opt(help="Adversarial prompt name (default false-malignant-history).")
    ] = None,
    delta: Annotated[
        str | None, Opt(help="Δ backend: dx (default), embedding, nli or entity.")
    ] = None,
    nli: Annotated[str | None, Opt(help="NLI model for --delta nli (hf:<dir>).")] = None,
    seed: Annotated[int | None, Opt(help="Generation and stain seed (default 0).")] = None,
    cache_dir: Annotated[
        Path | None, Opt(help="Cache subject outputs here (reruns never re-query).")
    ] = None,
    mpp: Annotated[float | None, Opt(help="Level-0 µm/px of --slide without metadata.")] = None,
    config: Annotated[
        Path | None,
        Opt(
            help="TOML config (stability, stain, view, subject, models, run.attack/seed/mpp); "
            "the options given here win."
        ),
    ] = None,
    as_json: Annotated[bool, Opt("--json", help="Print reports and score as JSON.")] = False,
) -> None:
    """Stability score S_s of a subject on an ROI or a slide: stain shift and prompt attack."""
    from pathgls.config import load_config

    console = Console(stderr=True)
    if (image is None) == (slide is None):
        fail(console, "give exactly one of --image or --slide")
    try:
        preflight.config_file(config)
        if image is not None:
            preflight.image_file(image, what="ROI image")
        if slide is not None:
            preflight.existing_file(slide, what="slide")
        if bag is not None:
            preflight.feature_bag(bag)
        cfg = load_config(
            config,
            run={"attack": attack, "seed": seed, "mpp": mpp},
            stability={"delta": delta},
            view={"kind": view},
            models={"nli": nli},
        )
        subject = subject or _one_subject(cfg.run.subjects)
        preflight.check_config_models(
            cfg,
            subjects=[subject],
            extractor=True,
            embedder=cfg.stability.delta in ("dx", "embedding", "entity"),
            nli=cfg.stability.delta == "nli",
        )
        run, item = _run(cfg, subject, image, slide, bag, cache_dir, nli_given=nli is not None)
    except PathGLSError as e:
        fail(console, e)
    score = run.score
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "item": item,
                    "subject": subject,
                    "stability": score.value,
                    "missing_reason": score.missing_reason,
                    "evidence": score.evidence,
                    "warnings": score.warnings,
                    "reports": {k: r.text for k, r in run.reports.items()},
                    "errors": run.errors,
                },
                indent=2,
            )
        )
    else:
        _print(run, item, subject)
    if score.value is None:  # the score asked for was not computed: a script must notice
        console.print(
            f"[red]error:[/] S_s could not be computed: {escape(score.missing_reason or '')}",
            soft_wrap=True,
        )
        raise typer.Exit(1)


def _one_subject(subjects: tuple[str, ...]) -> str:
    """The subject of the config when it names exactly one."""
    if len(subjects) != 1:
        raise ConfigError(
            "give --subject SPEC"
            + (f" (the config names {len(subjects)} subjects)" if subjects else "")
        )
    return subjects[0]


def _run(
    cfg: Any,
    subject: str,
    image: Path | None,
    slide: Path | None,
    bag: Path | None,
    cache_dir: Path | None,
    *,
    nli_given: bool,
) -> Any:
    from pathgls.grounding.sources import load_roi_image
    from pathgls.stability.run import run_stability
    from pathgls.subjects import build_subject
    from pathgls.subjects.cache import SubjectCache
    from pathgls.subjects.views import View, slide_view
    from pathgls.text import build_extractor
    from pathgls.text.embedders import build_embedder

    delta = cfg.stability.delta
    subj = build_subject(subject, cfg.subject)
    if image is not None:
        v, item = View(kind="roi", images=[load_roi_image(image)]), image.stem
    else:
        assert slide is not None
        v = slide_view(slide, bag=bag, config=cfg.view, mpp=cfg.run.mpp)
        item = slide.stem
    needs_embedder = delta in ("dx", "embedding", "entity")
    embedder = build_embedder(cfg.models.embedder) if needs_embedder else None
    nli_scorer = None
    if delta == "nli":
        from pathgls.nli import build_nli

        nli_scorer = build_nli(cfg.models.nli)
        if not hasattr(nli_scorer, "probabilities"):
            where = "--nli" if nli_given else "models.nli"
            raise PathGLSError(
                f"--delta nli needs an NLI model with entailment probabilities: give --nli "
                f"hf:<dir> ({where} is {cfg.models.nli!r})"
            )
    run = run_stability(
        subject=subj,
        view=v,
        item_id=item,
        extractor=build_extractor(cfg.models.extractor),
        embedder=embedder,
        nli=nli_scorer,
        attack=cfg.run.attack,
        seed=cfg.run.seed,
        cache=SubjectCache(cache_dir) if cache_dir else None,
        stain_config=cfg.stain,
        config=cfg.stability,
    )
    return run, item


def _print(run: Any, item: str, subject: str) -> None:
    out = Console()
    score = run.score
    value = "missing" if score.value is None else f"{score.value:.3f}"
    out.print(f"[bold]{escape(item)}[/] · {escape(subject)}  S_s = {value}", soft_wrap=True)
    if score.value is None:
        out.print(f"  {escape(score.missing_reason or '')}", soft_wrap=True)
    ev = score.evidence
    for key, label in (("aug", "stain"), ("attack", ev.get("attack", "attack"))):
        if f"delta_{key}" not in ev:
            continue
        ch = ev[f"changes_{key}"]
        out.print(
            f"  Δ_{key} = {ev[f'delta_{key}']:.3f} ({label}; {ev[f'scope_{key}']})"
            f"  diagnosis changed: {'yes' if ch['diagnosis_changed'] else 'no'}",
            soft_wrap=True,
        )
        for kind in ("added", "removed", "negation_flipped"):
            if ch[kind]:
                out.print(f"    {kind}: {escape(', '.join(ch[kind]))}", soft_wrap=True)
    for w in score.warnings:
        out.print(f"  [yellow]warning:[/] {escape(w)}", soft_wrap=True)
