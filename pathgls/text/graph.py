"""The report graph: entities as nodes, relations as edges (networkx), JSON and drawing."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import networkx as nx

from pathgls.types import Entity, Relation, ReportGraph

#: Node colours by entity type family, for drawings.
_TYPE_COLOURS = {
    "pathological_diagnosis": "#c0392b",
    "metastasis": "#c0392b",
    "anatomical_site": "#2980b9",
    "ihc_marker": "#8e44ad",
    "ihc_modifier": "#9b59b6",
    "biomarker_result": "#9b59b6",
    "grade": "#d35400",
    "stage": "#d35400",
}


def to_networkx(graph: ReportGraph) -> nx.MultiDiGraph:
    """A ``MultiDiGraph`` whose node ``i`` carries entity ``i``'s fields; edges carry ``type``."""
    g = nx.MultiDiGraph()
    for i, e in enumerate(graph.entities):
        g.add_node(i, **dataclasses.asdict(e))
    for r in graph.relations:
        g.add_edge(r.head, r.tail, key=r.type, type=r.type, confidence=r.confidence)
    return g


def graph_to_json(graph: ReportGraph) -> dict[str, Any]:
    """JSON-ready dict (node-link layout)."""
    return {
        "nodes": [{"id": i, **dataclasses.asdict(e)} for i, e in enumerate(graph.entities)],
        "edges": [dataclasses.asdict(r) for r in graph.relations],
    }


def graph_from_json(data: dict[str, Any]) -> ReportGraph:
    """Inverse of :func:`graph_to_json`."""
    nodes = sorted(data.get("nodes", []), key=lambda n: n["id"])
    entities = [Entity(**{k: v for k, v in n.items() if k != "id"}) for n in nodes]
    relations = [Relation(**r) for r in data.get("edges", [])]
    return ReportGraph(entities=entities, relations=relations)


def draw_graph(
    graph: ReportGraph,
    *,
    ax: Any = None,
    highlight: Iterable[int] = (),
    edge_types: Sequence[str] = ("result_of", "modifier_of", "located_in", "supports"),
    seed: int = 0,
) -> Any:
    """Draw the graph with matplotlib; nodes in ``highlight`` get a thick red border.

    Negated entities are drawn with a dashed outline and a leading "¬", uncertain ones with "?".

    Returns:
        The matplotlib axes.
    """
    g = to_networkx(graph)
    if ax is None:  # a figure of its own, outside pyplot's global state
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(10, 7))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    keep = [(u, v, k) for u, v, k in g.edges(keys=True) if k in edge_types]
    h = nx.MultiDiGraph()
    h.add_nodes_from(g.nodes(data=True))
    h.add_edges_from((u, v, k, g.edges[u, v, k]) for u, v, k in keep)
    pos = nx.spring_layout(h, seed=seed) if len(h) else {}
    marks = set(highlight)
    labels = {
        i: ("¬" if d["negated"] else "") + ("?" if d["uncertain"] else "") + d["text"][:28]
        for i, d in h.nodes(data=True)
    }
    colours = [_TYPE_COLOURS.get(d["type"], "#7f8c8d") for _, d in h.nodes(data=True)]
    widths = [3.0 if i in marks else 0.5 for i in h.nodes]
    edgecolors = ["red" if i in marks else "black" for i in h.nodes]
    styles = ["dashed" if d["negated"] else "solid" for _, d in h.nodes(data=True)]
    nx.draw_networkx_nodes(
        h,
        pos,
        ax=ax,
        node_color=colours,
        linewidths=widths,
        edgecolors=edgecolors,
        node_size=500,
        alpha=0.85,
    )
    for i, style in zip(h.nodes, styles, strict=True):
        if style == "dashed":
            ax.scatter(*pos[i], s=700, facecolors="none", edgecolors="black", linestyle="--")
    nx.draw_networkx_labels(h, pos, labels=labels, ax=ax, font_size=8)
    nx.draw_networkx_edges(h, pos, ax=ax, arrows=True, alpha=0.5)
    edge_labels: dict[tuple[int, int], str] = {}
    for u, v, k in keep:  # every relation between two entities, not only the last one
        edge_labels[(u, v)] = f"{edge_labels[(u, v)]}, {k}" if (u, v) in edge_labels else k
    nx.draw_networkx_edge_labels(h, pos, edge_labels=edge_labels, ax=ax, font_size=7)
    ax.set_axis_off()
    return ax
