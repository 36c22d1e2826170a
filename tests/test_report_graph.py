"""Relations, the report graph (networkx, JSON, drawing), perturbations and the text CLIs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from perturb import (
    CONTROL,
    LOGIC_ERRORS,
    apply_set,
    negate_key_finding,
    reword,
    swap_diagnosis,
    swap_grade,
)
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.text import analyze_report, build_extractor
from pathgls.text.graph import draw_graph, graph_from_json, graph_to_json, to_networkx

REPORT = (
    "**Microscopic Description:**\n"
    "- Sheets of atypical cells with marked nuclear pleomorphism and frequent mitoses.\n"
    "- Lymphovascular invasion is present.\n\n"
    "**Immunohistochemistry:**\n"
    "- ER positive, HER2 negative.\n\n"
    "**Final Diagnosis:**\n"
    "- Left breast: invasive ductal carcinoma, poorly differentiated.\n"
)


@pytest.fixture(scope="module")
def analyzed():
    return analyze_report(REPORT, extractor=build_extractor("lexicon"))


def _find(analyzed, text):
    return next(i for i, e in enumerate(analyzed.entities) if e.text.lower() == text.lower())


def test_relations(analyzed) -> None:
    ents = analyzed.entities
    rels = {
        (ents[r.head].text.lower(), r.type, ents[r.tail].text.lower()) for r in analyzed.relations
    }
    idc = _find(analyzed, "invasive ductal carcinoma")
    assert ents[idc].section == "diagnosis" and ents[idc].attributes.get("behavior") == "malignant"
    assert ("invasive ductal carcinoma", "located_in", "breast") in rels
    assert ("lymphovascular invasion", "supports", "invasive ductal carcinoma") in rels
    assert any(t == "supports" and h.startswith("marked nuclear pleomorphism") for h, t, _ in rels)
    assert any(t == "modifier_of" and h == "poorly differentiated" for h, t, _ in rels)
    # the IHC results are bound to their markers (as attributes, or as result_of edges)
    er = _find(analyzed, "ER")
    assert ents[er].type == "ihc_marker" and not ents[er].negated


def test_graph_json_roundtrip_and_networkx(analyzed, tmp_path: Path) -> None:
    g = analyzed.graph
    data = json.loads(json.dumps(graph_to_json(g)))
    assert graph_from_json(data) == g
    nxg = to_networkx(g)
    scope_nodes = {n for n in nxg.nodes if isinstance(n, str)}
    assert nxg.number_of_nodes() == len(g.entities) + len(scope_nodes)
    # one in_scope edge per entity, on top of the relations
    assert nxg.number_of_edges() == len(g.relations) + len(g.entities)
    assert nxg.nodes[0]["text"] == g.entities[0].text
    # the diagnosis under "Left breast:" is scoped to the left breast, in JSON and networkx
    idc = _find(analyzed, "invasive ductal carcinoma")
    assert data["nodes"][idc]["scope"]["organ"] == "breast"
    assert data["nodes"][idc]["scope"]["side"] == "left"
    assert "scope:breast, left, invasive ductal carcinoma" in nxg.successors(idc)
    assert any(idc in s["nodes"] and s["scope"]["side"] == "left" for s in data["scopes"])
    import matplotlib

    matplotlib.use("Agg")
    ax = draw_graph(g, highlight=[_find(analyzed, "invasive ductal carcinoma")])
    out = tmp_path / "graph.png"
    ax.figure.savefig(out)
    assert out.stat().st_size > 5000


def test_perturbations_are_scorer_free_and_targeted() -> None:
    import ast

    import perturb as p

    tree = ast.parse(Path(p.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.startswith("pathgls")}, imported
    t = "Invasive ductal carcinoma of the left breast. Lymphovascular invasion is present."
    assert swap_diagnosis(t).startswith("Ductal adenoma of the left breast.")
    assert (
        swap_diagnosis("Poorly differentiated squamous cell carcinoma.")
        == "Squamous cell papilloma."
    )
    assert swap_diagnosis("A high-grade liposarcoma.") == "A lipoma."
    assert negate_key_finding(t).endswith(
        "No stromal invasion is identified. Lymphovascular invasion is present."
    )
    assert negate_key_finding("The tumor has invaded the serosa. Adenocarcinoma.") == (
        "The tumor does not invade the serosa. Adenocarcinoma."
    )
    assert swap_grade("Adenocarcinoma, poorly differentiated.") is None  # nothing to contradict
    assert (
        swap_grade("Poorly differentiated. Histologic grade 3 of 3.")
        == "Poorly differentiated. Histologic grade 1 of 3."
    )
    assert swap_diagnosis("Benign breast tissue with fibrocystic change.") is None
    assert reword("The lesion showed necrosis.") == "The lesion demonstrated necrosis."
    items = apply_set([t, "Normal tissue."], LOGIC_ERRORS)
    assert {k for _, k, _ in items} == {"swap_diagnosis", "negate_key_finding"}
    assert [k for _, k, _ in apply_set(["x"], CONTROL)] == ["identity"]


def test_logic_and_entities_cli(tmp_path: Path, shared_data: Path) -> None:
    rep = tmp_path / "report.md"
    rep.write_text(
        REPORT.replace("invasive ductal carcinoma, poorly differentiated", "fibroadenoma")
    )
    res = CliRunner().invoke(app, ["logic", str(rep)])
    assert res.exit_code == 0, res.output
    assert "S_l = " in res.output and "the diagnosis is benign" in res.output
    res = CliRunner().invoke(app, ["logic", str(rep), "--json"])
    payload = json.loads(res.output.strip().splitlines()[-1])
    assert payload["logic"] < 0.5 and payload["evidence"]["nli"] == "rules"
    tsv = shared_data / "expert_scores" / "hare_expert_dev.tsv"
    res = CliRunner().invoke(app, ["logic", str(tsv), "--column", "reference", "--json"])
    lines = [json.loads(x) for x in res.output.strip().splitlines()]
    assert res.exit_code == 0 and len(lines) == 316
    res = CliRunner().invoke(app, ["entities", str(rep)])
    assert (
        res.exit_code == 0
        and "fibroadenoma" in res.output
        and "lymphovascular" in res.output.lower()
    )
    res = CliRunner().invoke(app, ["entities", str(rep), "--json"])
    assert graph_from_json(json.loads(res.output)).entities
    res = CliRunner().invoke(app, ["logic", str(tmp_path / "missing.txt")])
    assert res.exit_code == 2 and "no such file" in res.output
    res = CliRunner().invoke(app, ["logic", str(rep), "--nli", "nope"])
    assert res.exit_code == 2 and "unknown NLI backend" in res.output


def test_draw_graph_labels_every_relation_between_two_entities() -> None:
    from pathgls.types import Entity, Relation, ReportGraph

    g = ReportGraph(
        entities=[
            Entity(text="glands", type="finding", start=0, end=6),
            Entity(text="adenocarcinoma", type="diagnosis", start=10, end=24),
        ],
        relations=[
            Relation(head=0, tail=1, type="modifier_of"),
            Relation(head=0, tail=1, type="supports"),
        ],
    )
    ax = draw_graph(g)
    # each relation is its own arrow, coloured by type and named in the legend
    from matplotlib.colors import to_hex
    from matplotlib.patches import FancyArrowPatch

    from pathgls.text.graph import _RELATION_COLOURS

    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert sorted(to_hex(a.get_edgecolor()) for a in arrows) == sorted(
        _RELATION_COLOURS[t] for t in ("modifier_of", "supports")
    )
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"modifier_of", "supports"}
    assert len({a.get_connectionstyle().rad for a in arrows}) == 2  # not drawn over each other


def _text_boxes(fig) -> list:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    fig.draw(renderer)
    texts = [t for ax in fig.axes for t in ax.texts if t.get_text().strip()]
    texts += [t for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    return [(t.get_text(), t.get_window_extent(renderer)) for t in texts]


def _assert_readable(fig) -> None:
    """No two labels overlap and every label lies inside the figure."""
    import numpy as np

    boxes = _text_boxes(fig)
    assert boxes
    page = fig.bbox
    for text, box in boxes:
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, f"{text!r} leaves the figure"
        assert page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, f"{text!r} leaves the figure"
    b = np.array([[box.x0, box.y0, box.x1, box.y1] for _, box in boxes])
    w = np.minimum(b[:, None, 2], b[None, :, 2]) - np.maximum(b[:, None, 0], b[None, :, 0])
    h = np.minimum(b[:, None, 3], b[None, :, 3]) - np.maximum(b[:, None, 1], b[None, :, 1])
    overlap = np.triu((w > 0.5) & (h > 0.5), k=1)
    pairs = [(boxes[i][0], boxes[j][0]) for i, j in zip(*np.nonzero(overlap), strict=True)]
    assert not pairs, f"labels overlap: {pairs[:3]}"


def test_graph_labels_never_overlap(shared_data) -> None:
    import json as _json

    from pathgls.io.resources import resource
    from pathgls.io.tables import read_table

    ext = build_extractor("lexicon")
    demo = [
        _json.loads(line)["report"]
        for line in resource("demo_example_reports.jsonl").read_text().splitlines()
        if line.strip()
    ]
    real = read_table(shared_data / "reports" / "tcga_reports_dev.tsv").rows
    long_real = sorted((r["report"] for r in real[:60]), key=len)[-2:]  # dense, real graphs
    for text in [REPORT, *demo, *long_real]:
        analyzed = analyze_report(text, extractor=ext)
        if not analyzed.entities:
            continue
        ax = draw_graph(analyzed.graph)
        _assert_readable(ax.figure)
    assert len(analyze_report(long_real[-1], extractor=ext).entities) > 30  # a crowded one
