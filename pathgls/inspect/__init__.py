"""Looking at results: failure cases of a run, heat maps, graph drawings, GeoJSON for QuPath.

Reads what the other stages wrote (ScoreCards, grounding maps, feature bags); scores nothing.

May import: every stage below :mod:`pathgls.cli`.
"""
