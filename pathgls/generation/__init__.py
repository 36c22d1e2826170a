"""Generation: asking a subject for its reports under the three conditions.

- :mod:`.ask` — one report of a subject for a view and a prompt, through the subject cache (a
  ``patches`` view: one report per patch, then a summary of them);
- :mod:`.stain` — the stain-perturbed view (seeded Macenko factors) and what it says about
  the images (their stain kind, whether anything changed);
- :mod:`.conditions` — the original, stain and attack reports of one item, read once each
  (:class:`GeneratedReports`), with the errors of those that failed.

Every score module reads the original report from here; Stability compares the three
(:func:`pathgls.stability.score_generation`).

May import: core, :mod:`pathgls.config`, :mod:`pathgls.text`, :mod:`pathgls.attacks`,
:mod:`pathgls.subjects`.
"""

from pathgls.generation.ask import SUMMARY_PROMPT, ask_subject
from pathgls.generation.conditions import GeneratedReports, generate_conditions
from pathgls.generation.stain import StainedView, stained_view

__all__ = [
    "SUMMARY_PROMPT",
    "GeneratedReports",
    "StainedView",
    "ask_subject",
    "generate_conditions",
    "stained_view",
]
