"""Grounding evidence as GeoJSON that QuPath imports (File → Import objects, or drag and drop).

One feature per (entity, top patch) and one per entity's best window: a ``Polygon`` square in
level-0 pixels (QuPath's image coordinates, y down), with QuPath's ``objectType``,
``classification`` (name = the entity, colour per entity) and ``measurements`` (similarity,
calibrated score, rank) in ``properties``, next to plain keys for other tools.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pathgls.errors import PathGLSError

#: Distinct colours (RGB) given to entities in turn.
PALETTE = (
    (230, 25, 75),
    (60, 180, 75),
    (0, 130, 200),
    (245, 130, 48),
    (145, 30, 180),
    (70, 240, 240),
    (240, 50, 230),
    (210, 245, 60),
    (0, 128, 128),
    (170, 110, 40),
)


def box_polygon(box: list[int] | tuple[int, ...]) -> dict[str, Any]:
    """A closed square ring ``(x, y, w, h)`` → GeoJSON Polygon (counter-clockwise, y up)."""
    x, y, w, h = (int(v) for v in box)
    ring = [[x, y], [x + w, y], [x + w, y + h], [x, y + h], [x, y]]
    return {"type": "Polygon", "coordinates": [ring]}


def _feature(
    *, box: list[int], entity: dict[str, Any], colour: tuple[int, int, int], **extra: Any
) -> dict[str, Any]:
    kind = extra.pop("kind")
    rank = extra.pop("rank", None)
    sim = float(extra.pop("similarity"))
    measurements: dict[str, float] = {"similarity": sim}
    if entity.get("calibrated") is not None:
        measurements["entity calibrated score"] = float(entity["calibrated"])
    if rank is not None:
        measurements["rank"] = float(rank)
    label = f"{entity['phrase']} {'best window' if kind == 'best_window' else f'#{rank}'}"
    return {
        "type": "Feature",
        "geometry": box_polygon(box),
        "properties": {
            "objectType": "annotation",
            "name": f"{label} ({sim:.3f})",
            "classification": {"name": entity["phrase"], "color": list(colour)},
            "isLocked": False,
            "measurements": measurements,
            "entity": entity["phrase"],
            "concept": entity.get("concept", ""),
            "kind": kind,
            "rank": rank,
            "similarity": sim,
        },
    }


def grounding_geojson(evidence: dict[str, Any], *, top_k: int | None = None) -> dict[str, Any]:
    """A FeatureCollection of each entity's best patches and best window.

    Args:
        evidence: The grounding ModuleScore's evidence (also as read back from a ScoreCard).
        top_k: At most this many patches per entity (default: all in the evidence).

    Raises:
        PathGLSError: the evidence has no located entities, or is for an ROI image without
            slide coordinates (its boxes are then in image pixels; the export says so).
    """
    entities = evidence.get("entities") or []
    if not entities:
        raise PathGLSError("no grounded entity to export (the grounding score is missing)")
    features = []
    for i, ent in enumerate(entities):
        colour = PALETTE[i % len(PALETTE)]
        tops = ent.get("top_patches", [])
        for rank, top in enumerate(tops[:top_k] if top_k else tops, start=1):
            features.append(
                _feature(
                    box=top["box"],
                    entity=ent,
                    colour=colour,
                    kind="top_patch",
                    rank=rank,
                    similarity=top["similarity"],
                )
            )
        features.append(
            _feature(
                box=ent["box"],
                entity=ent,
                colour=colour,
                kind="best_window",
                similarity=ent["similarity"],
            )
        )
    source = evidence.get("source", {})
    return {
        "type": "FeatureCollection",
        "features": features,
        "properties": {
            "generator": "pathgls grounding",
            "image": source.get("name", ""),
            "space": source.get("space", "level0"),
            "calibration": evidence.get("calibration", ""),
            "encoder": evidence.get("encoder", ""),
        },
    }


def qupath_geojson_problems(obj: Any) -> list[str]:
    """What keeps ``obj`` from being a GeoJSON FeatureCollection of polygons QuPath imports.

    Checks the RFC 7946 structure QuPath's importer relies on: a FeatureCollection whose
    features each have a Polygon geometry (closed linear rings of ≥ 4 numeric ``[x, y]``
    positions) and a properties object with ``objectType`` annotation/detection and, when
    present, a ``classification`` with a name and an RGB colour. Returns [] when valid.
    """
    problems: list[str] = []
    if not isinstance(obj, dict) or obj.get("type") != "FeatureCollection":
        return ["top level is not a FeatureCollection"]
    feats = obj.get("features")
    if not isinstance(feats, list):
        return ["features is not a list"]
    for i, f in enumerate(feats):
        where = f"feature {i}"
        if not isinstance(f, dict) or f.get("type") != "Feature":
            problems.append(f"{where}: not a Feature")
            continue
        geom = f.get("geometry")
        if not isinstance(geom, dict) or geom.get("type") != "Polygon":
            problems.append(f"{where}: geometry is not a Polygon")
        else:
            rings = geom.get("coordinates")
            if not isinstance(rings, list) or not rings:
                problems.append(f"{where}: polygon without rings")
            for ring in rings or []:
                ok = (
                    isinstance(ring, list)
                    and len(ring) >= 4
                    and all(
                        isinstance(p, list)
                        and len(p) == 2
                        and all(isinstance(c, int | float) and not isinstance(c, bool) for c in p)
                        for p in ring
                    )
                )
                if not ok:
                    problems.append(f"{where}: a ring needs >= 4 numeric [x, y] positions")
                elif ring[0] != ring[-1]:
                    problems.append(f"{where}: ring is not closed")
        props = f.get("properties")
        if not isinstance(props, dict):
            problems.append(f"{where}: properties is not an object")
            continue
        if props.get("objectType") not in ("annotation", "detection"):
            problems.append(f"{where}: objectType must be annotation or detection")
        cls = props.get("classification")
        if cls is not None and not (
            isinstance(cls, dict)
            and isinstance(cls.get("name"), str)
            and isinstance(cls.get("color"), list)
            and len(cls["color"]) == 3
            and all(isinstance(c, int) and 0 <= c <= 255 for c in cls["color"])
        ):
            problems.append(f"{where}: classification needs a name and an RGB color")
        meas = props.get("measurements")
        if meas is not None and not (
            isinstance(meas, dict) and all(isinstance(v, int | float) for v in meas.values())
        ):
            problems.append(f"{where}: measurements must map names to numbers")
    return problems


def write_geojson(path: str | os.PathLike[str], collection: dict[str, Any]) -> Path:
    """Check and write a FeatureCollection (UTF-8 JSON).

    Raises:
        PathGLSError: the collection would not import in QuPath.
    """
    problems = qupath_geojson_problems(collection)
    if problems:
        raise PathGLSError("invalid GeoJSON: " + "; ".join(problems[:5]))
    from pathgls.io.atomic import write_text_atomic

    return write_text_atomic(path, json.dumps(collection, indent=1))
