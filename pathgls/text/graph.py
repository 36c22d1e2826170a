"""The report graph: entities as nodes, relations as edges (networkx), JSON and drawing.

Each entity carries its scope (which part, organ, side, lymph-node station it is about, see
:mod:`pathgls.text.scope`): in JSON as the node's ``scope``, plus one ``scopes`` entry per
distinct scope listing its entities; in networkx as ``scope:<description>`` nodes with an
``in_scope`` edge from each entity; in drawings as the node label's second line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import networkx as nx

from pathgls.types import Entity, Relation, ReportGraph, Scope

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


def _scope_of(graph: ReportGraph, i: int) -> Scope:
    return graph.scopes[i] if i < len(graph.scopes) else Scope()


def to_networkx(graph: ReportGraph) -> nx.MultiDiGraph:
    """A ``MultiDiGraph`` whose node ``i`` carries entity ``i``'s fields and its ``scope``;
    edges carry ``type``; every distinct scope is a node ``scope:<description>`` that its
    entities point to with an ``in_scope`` edge."""
    g = nx.MultiDiGraph()
    for i, e in enumerate(graph.entities):
        g.add_node(i, **dataclasses.asdict(e), scope=_scope_of(graph, i).to_dict())
    for r in graph.relations:
        g.add_edge(r.head, r.tail, key=r.type, type=r.type, confidence=r.confidence)
    if graph.scopes:
        for i in range(len(graph.entities)):
            scope = _scope_of(graph, i)
            node = f"scope:{scope.describe()}"
            g.add_node(node, kind="scope", **scope.to_dict())
            g.add_edge(i, node, key="in_scope", type="in_scope", confidence=1.0)
    return g


def graph_to_json(graph: ReportGraph) -> dict[str, Any]:
    """JSON-ready dict (node-link layout), with each node's scope and the distinct scopes."""
    nodes = []
    by_scope: dict[str, dict[str, Any]] = {}
    for i, e in enumerate(graph.entities):
        node: dict[str, Any] = {"id": i, **dataclasses.asdict(e)}
        if graph.scopes:
            scope = _scope_of(graph, i)
            node["scope"] = scope.to_dict()
            entry = by_scope.setdefault(
                scope.describe(), {"scope": scope.to_dict(), "label": scope.describe(), "nodes": []}
            )
            entry["nodes"].append(i)
        nodes.append(node)
    out: dict[str, Any] = {
        "nodes": nodes,
        "edges": [dataclasses.asdict(r) for r in graph.relations],
    }
    if graph.scopes:
        out["scopes"] = list(by_scope.values())
    return out


def graph_from_json(data: dict[str, Any]) -> ReportGraph:
    """Inverse of :func:`graph_to_json`."""
    nodes = sorted(data.get("nodes", []), key=lambda n: n["id"])
    entities = [Entity(**{k: v for k, v in n.items() if k not in ("id", "scope")}) for n in nodes]
    relations = [Relation(**r) for r in data.get("edges", [])]
    scopes = [Scope(**n["scope"]) for n in nodes] if nodes and "scope" in nodes[0] else []
    return ReportGraph(entities=entities, relations=relations, scopes=scopes)


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
    h.add_nodes_from((n, d) for n, d in g.nodes(data=True) if isinstance(n, int))  # entities
    h.add_edges_from((u, v, k, g.edges[u, v, k]) for u, v, k in keep)
    pos = nx.spring_layout(h, seed=seed) if len(h) else {}
    marks = set(highlight)
    labels = {
        i: ("¬" if d["negated"] else "")
        + ("?" if d["uncertain"] else "")
        + d["text"][:28]
        + (f"\n[{_scope_of(graph, i).describe()}]" if graph.scopes else "")
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
