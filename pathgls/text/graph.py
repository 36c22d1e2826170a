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


#: Edge colours by relation type, for drawings (a legend names them).
_RELATION_COLOURS = {
    "result_of": "#1f77b4",
    "modifier_of": "#2ca02c",
    "located_in": "#9467bd",
    "supports": "#ff7f0e",
}
#: Columns of the drawing's grid; a label's lines are wrapped to this many characters.
_COLUMNS, _LABEL_WIDTH = 6, 18


def flow_layout(g: nx.MultiDiGraph, *, columns: int = _COLUMNS) -> dict[Any, tuple[float, float]]:
    """Grid positions, one cell per node, that keep related entities side by side.

    Connected entities are placed in reading order, one component after another, row by
    row; a component that fits in a row is never split across two. Cells are one unit apart,
    rows go down from y = 0, so labels drawn under their node never reach another's.
    """
    comps = sorted((sorted(c) for c in nx.weakly_connected_components(g)), key=lambda c: c[0])
    pos: dict[Any, tuple[float, float]] = {}
    row = col = 0
    for comp in comps:
        if col and col + len(comp) > columns and len(comp) <= columns:
            row, col = row + 1, 0
        for node in comp:
            if col == columns:
                row, col = row + 1, 0
            pos[node] = (float(col), -float(row))
            col += 1
    return pos


def _label(text: str, scope: str | None) -> str:
    import textwrap

    lines = textwrap.wrap(text, _LABEL_WIDTH, max_lines=2, placeholder="…")
    if scope:
        lines += textwrap.wrap(f"[{scope}]", _LABEL_WIDTH, max_lines=2, placeholder="…]")
    return "\n".join(lines)


def graph_rows(graph: ReportGraph, *, columns: int = _COLUMNS) -> int:
    """How many rows :func:`draw_graph` needs for ``graph`` (to size a figure)."""
    if not graph.entities:
        return 0
    h = nx.MultiDiGraph()
    h.add_nodes_from(range(len(graph.entities)))
    h.add_edges_from((r.head, r.tail) for r in graph.relations)
    return 1 - int(min(y for _, y in flow_layout(h, columns=columns).values()))


def draw_graph(
    graph: ReportGraph,
    *,
    ax: Any = None,
    highlight: Iterable[int] = (),
    edge_types: Sequence[str] = ("result_of", "modifier_of", "located_in", "supports"),
    seed: int = 0,
) -> Any:
    """Draw the graph with matplotlib; nodes in ``highlight`` get a thick red border.

    Entities sit on a grid in reading order, related ones side by side (:func:`flow_layout`),
    each labelled underneath (wrapped; the scope on its own lines), so no two labels overlap;
    relations are arrows coloured by type, named in a legend beside the graph. Negated
    entities are drawn with a dashed outline and a leading "¬", uncertain ones with "?".

    Args:
        graph: The report graph.
        ax: Axes to draw on (None: a new figure sized to the graph).
        highlight: Entity indices to outline in red.
        edge_types: Relation types drawn.
        seed: Unused (the layout is deterministic); kept for callers.

    Returns:
        The matplotlib axes.
    """
    del seed
    g = to_networkx(graph)
    keep = [(u, v, k) for u, v, k in g.edges(keys=True) if k in edge_types]
    h = nx.MultiDiGraph()
    h.add_nodes_from((n, d) for n, d in g.nodes(data=True) if isinstance(n, int))  # entities
    h.add_edges_from((u, v, k, g.edges[u, v, k]) for u, v, k in keep)
    pos = flow_layout(h)
    rows = 1 - int(min((y for _, y in pos.values()), default=0.0))
    if ax is None:  # a figure of its own, outside pyplot's global state
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(12, 1.0 + 1.1 * rows))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        fig.subplots_adjust(left=0.02, right=0.86, top=0.98, bottom=0.02)
    marks = set(highlight)
    labels = {
        i: _label(
            ("¬" if d["negated"] else "") + ("?" if d["uncertain"] else "") + d["text"],
            _scope_of(graph, i).describe() if graph.scopes else None,
        )
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
        node_size=300,
        alpha=0.85,
    )
    for i, style in zip(h.nodes, styles, strict=True):
        if style == "dashed":
            ax.scatter(*pos[i], s=450, facecolors="none", edgecolors="black", linestyle="--")
    for i, text in labels.items():
        x, y = pos[i]
        ax.text(x, y - 0.14, text, ha="center", va="top", fontsize=7, linespacing=1.1)
    drawn = []
    top = 0.45  # the highest point drawn: an arc's peak may rise above the top row
    seen: dict[frozenset[int], int] = {}  # relations already drawn between two entities
    for rel in edge_types:
        edges = [(u, v) for u, v, k in keep if k == rel]
        if not edges:
            continue
        by_bow: dict[float, list[tuple[int, int]]] = {}
        for u, v in edges:  # arcs bow upwards, away from the labels; a second one further
            nth = seen.get(frozenset((u, v)), 0)
            seen[frozenset((u, v))] = nth + 1
            bow = 0.25 + 0.2 * nth
            by_bow.setdefault(-bow if pos[v][0] >= pos[u][0] else bow, []).append((u, v))
            # a quadratic arc3 curve peaks half its control point's offset (bow × length) away
            (xu, yu), (xv, yv) = pos[u], pos[v]
            length = ((xv - xu) ** 2 + (yv - yu) ** 2) ** 0.5
            top = max(top, (yu + yv) / 2 + bow * length / 2 + 0.1)
        for rad, group in by_bow.items():  # one call per arc shape: fast on big graphs
            nx.draw_networkx_edges(
                h,
                pos,
                edgelist=group,
                ax=ax,
                arrows=True,
                edge_color=_RELATION_COLOURS.get(rel, "#555555"),
                alpha=0.8,
                node_size=300,
                connectionstyle=f"arc3,rad={rad}",
            )
        drawn.append(rel)
    if drawn:
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], color=_RELATION_COLOURS.get(r, "#555555")) for r in drawn]
        ax.legend(
            handles,
            drawn,
            title="relations",
            loc="upper left",
            bbox_to_anchor=(1.0, 1.0),
            fontsize=7,
            title_fontsize=7,
            frameon=False,
        )
    ax.set_xlim(-0.6, _COLUMNS - 0.4)
    ax.set_ylim(-rows + 0.25, top)  # every arc inside the axes, clear of the title above
    ax.set_axis_off()
    return ax
