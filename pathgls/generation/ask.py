"""One report of a subject for a view and a prompt, through the subject cache."""

from __future__ import annotations

import numpy as np

from pathgls.attacks.prompts import Prompt
from pathgls.subjects.base import Subject
from pathgls.subjects.cache import SubjectCache, cached_generate
from pathgls.subjects.views import View

SUMMARY_PROMPT = (
    "Below are reports of {k} regions of one slide.\n\n{reports}\n\n"
    "Combine them into one report of the whole slide in the same six-field format."
)


def ask_subject(
    subject: Subject,
    *,
    view: View,
    images: list[np.ndarray],
    prompt: Prompt,
    condition: str,
    item_id: str,
    seed: int,
    cache: SubjectCache | None,
    max_chars: int | None,
) -> str:
    """The report ``subject`` writes of ``images`` (the view's, or their stained copies).

    A ``patches`` view of several images asks for one report per patch (conditions
    ``<condition>/patch<i>``) and then for a summary of them (``<condition>/summary``, shown the
    first image); any other view is asked once. Every answer goes through ``cache`` (None:
    always generate).

    Raises:
        SubjectError: the subject failed or answered more than ``max_chars`` characters.
    """

    def ask(imgs: list[np.ndarray], text: str, cond: str) -> str:
        return cached_generate(
            subject,
            max_chars=max_chars,
            images=imgs,
            prompt=text,
            system=prompt.system or None,
            seed=seed,
            item_id=item_id,
            condition=cond,
            cache=cache,
        ).text

    if view.kind != "patches" or len(images) == 1:
        return ask(images, prompt.user, condition)
    parts = [ask([im], prompt.user, f"{condition}/patch{i}") for i, im in enumerate(images)]
    joined = "\n\n".join(f"Region {i + 1}:\n{p}" for i, p in enumerate(parts))
    summary = SUMMARY_PROMPT.format(k=len(parts), reports=joined)
    return ask(images[:1], summary, f"{condition}/summary")
