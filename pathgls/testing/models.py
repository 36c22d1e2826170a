"""Randomly initialised models of the real architectures, for tests and benchmarks.

Each helper writes a model directory that the real registry code loads (``hf:<dir>``,
``open_clip:<dir>``, or a models directory laid out as ``<org>--<name>``), fully offline: the
tokenizers are built here from the byte-level alphabet, nothing comes from the hub. Every
directory carries the marker file ``PATHGLS_RANDOM_WEIGHTS``; encoders loaded from it report
``random_weights=True`` and log a warning. These models prove wiring, shapes and speed — their
scores mean nothing and are never reported as results.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, TypedDict

import torch
from torch import nn

from pathgls.hub.store import RANDOM_WEIGHTS_MARKER

_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

# Hugging Face CLIP sizes: "tiny" for tests, "plip" = vinid/plip (ViT-B/32 + 12-layer text).
_HF_SIZES: dict[str, dict[str, Any]] = {
    "tiny": {
        "text": {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
        },
        "vision": {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
        },
        "projection_dim": 16,
        "vocab_size": None,  # the tokenizer's
    },
    "plip": {
        "text": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "num_hidden_layers": 12,
            "num_attention_heads": 8,
        },
        "vision": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
        },
        "projection_dim": 512,
        "vocab_size": 49408,
    },
}


def mark_random(directory: str | os.PathLike[str]) -> Path:
    """Write the ``PATHGLS_RANDOM_WEIGHTS`` marker into ``directory``."""
    marker = Path(directory) / RANDOM_WEIGHTS_MARKER
    marker.write_text(
        "Randomly initialised weights written by pathgls.testing; never report scores.\n"
    )
    return marker


def _byte_alphabet() -> list[str]:
    from tokenizers import pre_tokenizers

    return sorted(pre_tokenizers.ByteLevel.alphabet())


def _clip_tokenizer(max_length: int) -> Any:
    """A working CLIP byte-level BPE tokenizer (bytes, no merges) with CLIP's special tokens."""
    from transformers import CLIPTokenizer

    alphabet = _byte_alphabet()
    vocab = {c: i for i, c in enumerate(alphabet)}
    vocab.update({c + "</w>": len(alphabet) + i for i, c in enumerate(alphabet)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)  # the highest id, as in CLIP
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=max_length)


def _openai_clip_tokenizer(max_length: int) -> Any:
    """OpenAI CLIP's BPE tokenizer (PLIP's), rebuilt offline from the merges open_clip ships."""
    import gzip
    import json
    import tempfile

    import open_clip.tokenizer as oc_tokenizer
    from transformers import CLIPTokenizer

    with gzip.open(oc_tokenizer.default_bpe(), "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    merges = lines[1 : 49152 - 256 - 2 + 1]  # as open_clip's SimpleTokenizer (and OpenAI's)
    alphabet = list(oc_tokenizer.bytes_to_unicode().values())
    vocab = [*alphabet, *(c + "</w>" for c in alphabet), *("".join(m.split()) for m in merges)]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    with tempfile.TemporaryDirectory() as tmp:
        vocab_file, merges_file = Path(tmp) / "vocab.json", Path(tmp) / "merges.txt"
        vocab_file.write_text(json.dumps({v: i for i, v in enumerate(vocab)}))
        merges_file.write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
        return CLIPTokenizer(
            str(vocab_file),
            str(merges_file),
            pad_token="<|endoftext|>",
            model_max_length=max_length,
        )


def save_random_hf_clip(
    directory: str | os.PathLike[str], *, size: Literal["tiny", "plip"] = "tiny", seed: int = 0
) -> Path:
    """Save a random Hugging Face ``CLIPModel`` with tokenizer and image-processor config.

    Args:
        directory: Created if needed.
        size: ``tiny`` (2-layer, 32-wide towers, 16-d space) or ``plip`` (the full architecture
            of ``vinid/plip``: ViT-B/32 at 224 px, hidden 768; 12-layer 512-wide text; 512-d).
        seed: Torch seed of the initialisation.

    Returns:
        The directory, loadable as ``hf:<directory>``.
    """
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    spec = _HF_SIZES[size]
    # plip: the real CLIP BPE, so text-tower timings see real token counts (bytes alone are
    # 2.6× the tokens on pathology phrases); tiny: a byte-level tokenizer without merges
    tokenizer = _openai_clip_tokenizer(77) if size == "plip" else _clip_tokenizer(77)
    text = {
        **spec["text"],
        "vocab_size": spec["vocab_size"] or len(tokenizer),
        "max_position_embeddings": 77,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    vision = {**spec["vision"], "image_size": 224, "patch_size": 32}
    config = CLIPConfig(
        text_config=text, vision_config=vision, projection_dim=spec["projection_dim"]
    )
    torch.manual_seed(seed)
    CLIPModel(config).eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    CLIPImageProcessor(
        size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224}
    ).save_pretrained(out)
    mark_random(out)
    return out


_TINY_OPEN_CLIP = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 224, "layers": 2, "width": 32, "head_width": 16, "patch_size": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
}


def _preprocess_cfg(size: int) -> dict[str, Any]:
    return {
        "size": size,
        "mean": _CLIP_MEAN,
        "std": _CLIP_STD,
        "interpolation": "bicubic",
        "resize_mode": "shortest",
    }


def save_random_open_clip(directory: str | os.PathLike[str], *, seed: int = 0) -> Path:
    """Save a tiny random open_clip CLIP (``open_clip_config.json`` + safetensors weights).

    It uses open_clip's bundled CLIP tokenizer (vocabulary 49408, context 77), so it loads
    offline as ``open_clip:<directory>``.
    """
    import open_clip
    from safetensors.torch import save_file

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = open_clip.CLIP(**json.loads(json.dumps(_TINY_OPEN_CLIP)))
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out / "open_clip_model.safetensors"))
    config = {"model_cfg": _TINY_OPEN_CLIP, "preprocess_cfg": _preprocess_cfg(224)}
    (out / "open_clip_config.json").write_text(json.dumps(config, indent=2))
    mark_random(out)
    return out


# Tiny CONCH: same structure as the real one (timm trunk + attentional pooling + CLS text tower).
_TINY_CONCH: dict[str, Any] = {  # open_clip's model config (JSON)
    "embed_dim": 16,
    "custom_text": True,
    "vision_cfg": {
        "image_size": 448, "patch_size": 16, "width": 32, "layers": 2, "head_width": 16,
        "mlp_ratio": 4.0, "no_ln_pre": True, "attentional_pool": True, "attn_pooler_queries": 1,
        "attn_pooler_heads": 2, "pool_type": "tok", "norm_kwargs": {"eps": 1e-06},
    },
    "text_cfg": {
        "context_length": 15, "vocab_size": 259, "width": 32, "heads": 2, "layers": 2,
        "mlp_ratio": 4.0, "embed_cls": True, "pad_id": 0,
    },
}  # fmt: skip


class ConchVisualReference(nn.Module):
    """CONCH's contrastive image path with CONCH's parameter names (``visual.*`` of its checkpoint).

    timm ViT trunk (final norm included) → attentional pooler (1 query) → LayerNorm → projection,
    as in ``conch.open_clip_custom.vision_tower.VisualModel``; the caption pooler is kept only so
    the checkpoint has all of CONCH's keys. Used to write and to check the tiny CONCH.
    """

    def __init__(self, cfg: dict[str, Any]) -> None:
        from open_clip.transformer import AttentionalPooler
        from timm.models.vision_transformer import VisionTransformer

        super().__init__()
        v, dim = cfg["vision_cfg"], cfg["embed_dim"]
        self.trunk = VisionTransformer(
            img_size=v["image_size"], patch_size=v["patch_size"], embed_dim=v["width"],
            depth=v["layers"], num_heads=v["width"] // v["head_width"], mlp_ratio=v["mlp_ratio"],
            num_classes=0, dynamic_img_size=True,
        )  # fmt: skip
        heads = v["attn_pooler_heads"]
        self.attn_pool_contrast = AttentionalPooler(dim, v["width"], n_head=heads, n_queries=1)
        self.ln_contrast = nn.LayerNorm(dim)
        self.proj_contrast = nn.Parameter(v["width"] ** -0.5 * torch.randn(dim, dim))
        self.attn_pool_caption = AttentionalPooler(
            v["width"], v["width"], n_head=heads, n_queries=4
        )
        self.ln_caption = nn.LayerNorm(v["width"])

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        tokens = self.trunk.forward_features(pixels)
        pooled = self.ln_contrast(self.attn_pool_contrast(tokens)[:, 0])
        return pooled @ self.proj_contrast


def _conch_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    specials = ["<pad>", "<start_of_text>", "<end_of_text>"]
    vocab = {t: i for i, t in enumerate(specials)}
    vocab.update({c: len(specials) + i for i, c in enumerate(_byte_alphabet())})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.normalizer = normalizers.Sequence(
        [normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase()]
    )
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(
        single="<start_of_text> $A <end_of_text>",
        special_tokens=[("<start_of_text>", 1), ("<end_of_text>", 2)],
    )
    tok.add_special_tokens(specials)
    return tok


def save_random_conch(directory: str | os.PathLike[str], *, seed: int = 0) -> Path:
    """Save a tiny random CONCH in CONCH's own checkpoint layout (``pytorch_model.bin``).

    Also writes a byte-level ``tokenizer.json`` with CONCH's special tokens and an
    ``open_clip_config.json`` with the tiny sizes, so that the ``conch`` registry entry loads it
    (e.g. from ``<models_dir>/MahmoodLab--CONCH``). LayerNorm affines and the patch-embedding
    bias are randomised too, so a conversion that dropped any of them would be caught.
    """
    from open_clip.transformer import TextTransformer

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    visual = ConchVisualReference(_TINY_CONCH)
    t = _TINY_CONCH["text_cfg"]
    text = TextTransformer(
        context_length=t["context_length"], vocab_size=t["vocab_size"], width=t["width"],
        heads=t["heads"], layers=t["layers"], output_dim=_TINY_CONCH["embed_dim"],
        embed_cls=True, pad_id=t["pad_id"],
    )  # fmt: skip
    with torch.no_grad():
        for module in [*visual.modules(), *text.modules()]:
            if isinstance(module, nn.LayerNorm):
                module.weight.normal_(1.0, 0.2)
                module.bias.normal_(0.0, 0.2)
        visual.trunk.patch_embed.proj.bias.normal_(0.0, 0.2)
        text.cls_emb.normal_(0.0, 0.02)
        text.positional_embedding.normal_(0.0, 0.01)
        text.text_projection.normal_(0.0, t["width"] ** -0.5)
    state = {f"visual.{k}": v for k, v in visual.state_dict().items()}
    state.update({f"text.{k}": v for k, v in text.state_dict().items()})
    state["logit_scale"] = torch.tensor(4.6052)
    torch.save(state, out / "pytorch_model.bin")
    config = {"model_cfg": _TINY_CONCH, "preprocess_cfg": _preprocess_cfg(448)}
    (out / "open_clip_config.json").write_text(json.dumps(config, indent=2))
    _conch_tokenizer().save(str(out / "tokenizer.json"))
    mark_random(out)
    return out


def load_conch_visual_reference(directory: str | os.PathLike[str]) -> ConchVisualReference:
    """The :class:`ConchVisualReference` of a directory written by :func:`save_random_conch`."""
    cfg = json.loads((Path(directory) / "open_clip_config.json").read_text())["model_cfg"]
    state = torch.load(Path(directory) / "pytorch_model.bin", map_location="cpu", weights_only=True)
    ref = ConchVisualReference(cfg)
    ref.load_state_dict(
        {k[len("visual.") :]: v for k, v in state.items() if k.startswith("visual.")}
    )
    return ref.eval()


# A few report sentences: the default corpus of the tiny NLI tokenizer (a Unigram model trained
# here, offline, in place of DeBERTa-v3's SentencePiece model).
_NLI_CORPUS = (
    "Invasive ductal carcinoma, grade 2, measuring 2.1 cm in greatest dimension.",
    "No evidence of malignancy is identified in the sampled tissue.",
    "Sections show benign breast tissue with fibrocystic changes and apocrine metaplasia.",
    "The surgical margins are negative; the closest margin is 3 mm (posterior).",
    "Lymphovascular invasion is present. Perineural invasion is not identified.",
    "Two of fourteen lymph nodes are positive for metastatic carcinoma (2/14).",
    "Estrogen receptor positive (95%), progesterone receptor negative, HER2 negative.",
    "Ductal carcinoma in situ, solid and cribriform types, with comedonecrosis.",
    "Well-differentiated adenocarcinoma of the colon invading the muscularis propria.",
    "Squamous cell carcinoma in situ with focal microinvasion; margins are clear.",
    "The lesion is consistent with a benign nevus; no atypia or mitoses are seen.",
    "High-grade dysplasia is present, suspicious for invasive adenocarcinoma.",
    "Skin biopsy: basal cell carcinoma, nodular type, extending to the deep margin.",
    "Prostate: Gleason score 3 + 4 = 7 (grade group 2), involving 40% of the core.",
    "Chronic inflammation and reactive changes; negative for dysplasia.",
    "Tumour necrosis is absent. Ki-67 proliferation index is approximately 20%.",
)

# Special tokens of DeBERTa-v3, at its ids (``[MASK]`` goes last; it is 128000 there).
_DEBERTA_SPECIALS = ("[PAD]", "[CLS]", "[SEP]", "[UNK]")

# DebertaV2 sizes: "tiny" for tests; "deberta-v3-base" = microsoft/deberta-v3-base. The init
# range is ~1/sqrt(hidden) (unit gain) so that the outputs visibly depend on the input; with
# the usual 0.02 every pair gets nearly the same probabilities.
_DEBERTA_SIZES: dict[str, dict[str, Any]] = {
    "tiny": {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "vocab_size": None,  # the tokenizer's
        "tokenizer_vocab": 600,
        "initializer_range": 0.25,
    },
    "deberta-v3-base": {
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "vocab_size": 128100,
        "tokenizer_vocab": 8000,
        "initializer_range": 0.036,
    },
}


def _unigram_tokenizer(corpus: list[str], vocab_size: int, max_length: int) -> Any:
    """A DeBERTa-v3-style tokenizer (Metaspace + Unigram) trained on ``corpus``, offline."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import DebertaV2Tokenizer

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    alphabet = [chr(c) for c in range(33, 127)] + list("µ×°±≤≥–—’“”éè")
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size,
        special_tokens=list(_DEBERTA_SPECIALS),
        unk_token="[UNK]",
        initial_alphabet=alphabet,
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    pieces = [(str(p), float(s)) for p, s in json.loads(tok.to_str())["model"]["vocab"]]
    pieces.append(("[MASK]", 0.0))
    return DebertaV2Tokenizer(vocab=pieces, unk_id=3, model_max_length=max_length)


def save_random_nli_classifier(
    directory: str | os.PathLike[str],
    *,
    size: Literal["tiny", "deberta-v3-base"] = "tiny",
    label_order: tuple[str, ...] = ("entailment", "neutral", "contradiction"),
    seed: int = 0,
    corpus: list[str] | None = None,
) -> Path:
    """Save a random DeBERTa-v2-architecture NLI classifier with an offline tokenizer.

    The model is ``DebertaV2ForSequenceClassification`` with DeBERTa-v3's attention settings
    (relative attention, 256 log-buckets, shared ``c2p``/``p2c`` keys, layer-normed relative
    embeddings, no absolute positions, no token types). Its ``id2label`` follows
    ``label_order``, so label mapping can be tested with any order. The tokenizer is a
    ``DebertaV2Tokenizer`` over a Unigram model trained here on ``corpus`` (DeBERTa-v3's own
    SentencePiece model cannot be fetched offline); it uses a few hundred to a few thousand
    ids, with ``[PAD]``, ``[CLS]``, ``[SEP]``, ``[UNK]`` at DeBERTa-v3's ids 0–3.

    Args:
        directory: Created if needed.
        size: ``tiny`` (2 layers, hidden 32, the tokenizer's vocabulary) or ``deberta-v3-base``
            (the full architecture of DeBERTa-v3-base: 12 layers, hidden 768, 12 heads,
            intermediate 3072, vocabulary 128100 of which the tokenizer uses only its own few
            thousand ids — the embedding matrix and speed are those of the real model).
        label_order: Label names by class index, written to ``config.id2label``.
        seed: Torch seed of the initialisation.
        corpus: Sentences to train the tokenizer on (default: a few built-in report
            sentences); text like the scored reports gives realistic sequence lengths.

    Returns:
        The directory, loadable as ``hf:<directory>`` by the NLI registry.
    """
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    from pathgls.hub.hf import quiet_loading

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    spec = _DEBERTA_SIZES[size]
    tokenizer = _unigram_tokenizer(list(corpus or _NLI_CORPUS), spec["tokenizer_vocab"], 512)
    # position_buckets, norm_rel_ebd, share_att_key and pooler_hidden_size are not in the
    # config's signature: the config keeps them as attributes and the DeBERTa layers read them
    config = DebertaV2Config(  # type: ignore[call-arg]
        vocab_size=spec["vocab_size"] or len(tokenizer),
        hidden_size=spec["hidden_size"],
        num_hidden_layers=spec["num_hidden_layers"],
        num_attention_heads=spec["num_attention_heads"],
        intermediate_size=spec["intermediate_size"],
        hidden_act="gelu",
        max_position_embeddings=512,
        type_vocab_size=0,
        layer_norm_eps=1e-7,
        relative_attention=True,
        max_relative_positions=-1,
        position_buckets=256,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        pooler_hidden_size=spec["hidden_size"],
        pooler_hidden_act="gelu",
        pooler_dropout=0.0,
        pad_token_id=tokenizer.pad_token_id,
        initializer_range=spec["initializer_range"],
        id2label=dict(enumerate(label_order)),
        label2id={label: i for i, label in enumerate(label_order)},
    )
    torch.manual_seed(seed)
    model = DebertaV2ForSequenceClassification(config).eval()
    with torch.no_grad():  # distinct class priors, so a wrong label column shows
        model.classifier.bias.normal_(0.0, 0.5)
    with quiet_loading():
        model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    mark_random(out)
    return out


# Whole words of the tiny token classifier's WordPiece vocabulary: these are one token each; any
# other word is split into characters (``x`` then ``##y`` pieces), so sub-word handling shows.
_NER_WORDS = (
    "the", "of", "and", "with", "is", "are", "no", "in", "for", "to", "a", "cm",
    "invasive", "ductal", "lobular", "carcinoma", "adenocarcinoma", "lymphoma", "tumour", "tumor",
    "breast", "colon", "lymph", "node", "nodes", "skin", "prostate", "margin", "margins",
    "grade", "moderately", "poorly", "well", "differentiated", "positive", "negative",
    "er", "pr", "her2", "ki", "67", "necrosis", "invasion", "diagnosis", "microscopic",
    "description", "findings", "comment", "identified", "present", "metastatic",
)  # fmt: skip


def _wordpiece_tokenizer(max_length: int) -> Any:
    """A working BERT WordPiece fast tokenizer: specials, :data:`_NER_WORDS`, ASCII characters."""
    import string

    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertTokenizer  # the fast tokenizer (transformers 5: one class)

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = [c for c in string.printable if not c.isspace() and not c.isupper()]
    pieces = [*specials, *_NER_WORDS, *chars, *("##" + c for c in chars)]
    vocab = {piece: i for i, piece in enumerate(dict.fromkeys(pieces))}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.decoder = decoders.WordPiece()
    return BertTokenizer(tokenizer_object=tok, model_max_length=max_length)


def save_random_token_classifier(
    directory: str | os.PathLike[str],
    *,
    labels: list[str] | tuple[str, ...] | None = None,
    seed: int = 0,
) -> Path:
    """Save a tiny random BERT token classifier (``BertForTokenClassification``) and tokenizer.

    Args:
        directory: Created if needed.
        labels: Label names by class id, written to ``config.id2label`` (default: HARE-NER's
            BIO set, :data:`pathgls.text.hf_ner.HARE_NER_LABELS`).
        seed: Torch seed of the initialisation.

    Returns:
        The directory, loadable as ``hf-ner:<directory>`` (2 layers, hidden 32, 512 positions;
        a lower-casing WordPiece tokenizer over a few report words and the ASCII characters).
    """
    from transformers import BertConfig, BertForTokenClassification

    if labels is None:
        from pathgls.text.hf_ner import HARE_NER_LABELS

        labels = HARE_NER_LABELS
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _wordpiece_tokenizer(512)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    torch.manual_seed(seed)
    return _save_tiny(BertForTokenClassification(config).eval(), tokenizer, out)


# Tiny LLaVA: a CLIP vision tower (32 px, 8 px patches: 16 image tokens) and a Llama decoder.
_VLM_IMAGE_SIZE = 32
_VLM_PATCH_SIZE = 8


class _TowerSize(TypedDict):
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int


_VLM_TOWER = _TowerSize(hidden_size=32, intermediate_size=64, num_hidden_layers=2)
# Wide enough an init that the greedy text visibly depends on the image and the prompt (with the
# usual 0.02 a random decoder repeats one token whatever it is shown).
_VLM_INIT_RANGE = 0.1

#: Chat template of the tiny VLM: ``{{ bos }}<|role|>\n...<eos>\n`` per message, one ``<image>``
#: per image part, and ``<|assistant|>\n`` as the generation prompt.
VLM_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>\n"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def _byte_bpe_tokenizer(corpus: list[str], vocab_size: int, max_length: int) -> Any:
    """A Llama-style byte-level BPE fast tokenizer trained on ``corpus``, offline.

    Specials ``<unk>`` ``<s>`` ``</s>`` ``<pad>`` get ids 0–3, every byte has a token (any text
    can be encoded), ``<s>`` is prepended to each sequence, and ``<image>`` is the last id.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>", "<pad>"]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        extra_special_tokens={"image_token": "<image>"},
        model_max_length=max_length,
    )


def save_random_vlm(
    directory: str | os.PathLike[str], *, seed: int = 0, chat_template: bool = True
) -> Path:
    """Save a tiny random LLaVA (``LlavaForConditionalGeneration``) with its ``LlavaProcessor``.

    The vision tower is a 2-layer CLIP ViT at 32 px with 8 px patches; LLaVA's ``default``
    feature selection drops its CLS token, so each image becomes 16 ``<image>`` tokens, and the
    processor (``patch_size`` 8, one additional token, ``default`` strategy) expands each
    ``<image>`` of the prompt to exactly those 16. The decoder is a 2-layer, 32-wide Llama over
    a byte-level BPE vocabulary of a few hundred tokens trained here on report sentences. Rows
    of the language-model head are zeroed for the special tokens and for every token that does
    not decode to printable ASCII, so greedy output is readable (if meaningless) text and
    always runs to ``max_new_tokens``.

    Args:
        directory: Created if needed.
        seed: Torch seed of the initialisation.
        chat_template: Save :data:`VLM_CHAT_TEMPLATE` with the processor (False: a model
            without a chat template, for error tests).

    Returns:
        The directory, loadable with ``AutoModelForImageTextToText`` and ``AutoProcessor``
        from local files, and as the subject ``hf:<directory>``.
    """
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    from pathgls.hub.hf import quiet_loading

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _byte_bpe_tokenizer(list(_NLI_CORPUS), 400, 2048)
    side, patch = _VLM_IMAGE_SIZE, _VLM_PATCH_SIZE
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": side},
        crop_size={"height": side, "width": side},
        image_mean=_CLIP_MEAN,
        image_std=_CLIP_STD,
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # CLIP's CLS
        chat_template=VLM_CHAT_TEMPLATE if chat_template else None,
    )
    vision = CLIPVisionConfig(
        **_VLM_TOWER,
        num_attention_heads=2,
        image_size=side,
        patch_size=patch,
        initializer_range=_VLM_INIT_RANGE,
    )
    text = LlamaConfig(
        **_VLM_TOWER,
        vocab_size=len(tokenizer),
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        initializer_range=_VLM_INIT_RANGE,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=processor.image_token_id,
        image_seq_length=(side // patch) ** 2,
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,  # as in LLaVA-1.5
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    readable = [
        i
        for i in range(len(tokenizer))
        if i not in tokenizer.all_special_ids
        and (piece := tokenizer.decode([i])).isascii()
        and piece.isprintable()
    ]
    with torch.no_grad():
        head = model.get_output_embeddings().weight
        keep = torch.zeros(head.shape[0], 1, dtype=head.dtype)
        keep[readable] = 1.0
        head.mul_(keep)
    with quiet_loading():
        model.save_pretrained(out)
    processor.save_pretrained(out)
    mark_random(out)
    return out


#: Entity markers of HARE-RE's input (``[E1]head[/E1] ... [E2]tail[/E2]``).
RE_MARKERS = ("[E1]", "[/E1]", "[E2]", "[/E2]")


def _tiny_bert_config(tokenizer: Any, **extra: Any) -> Any:
    from transformers import BertConfig

    return BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        initializer_range=0.25,  # wide, so outputs visibly depend on the input
        **extra,
    )


def save_random_re_classifier(
    directory: str | os.PathLike[str],
    *,
    labels: list[str] | tuple[str, ...] = ("NO_REL", "Relation"),
    seed: int = 0,
) -> Path:
    """Save a tiny random BERT pair classifier in the layout of HARE-RE.

    The tokenizer is the tiny WordPiece one of :func:`save_random_token_classifier` with the
    entity markers :data:`RE_MARKERS` added as special tokens (one id each, never split or
    lower-cased), and the model is a ``BertForSequenceClassification`` over it.

    Args:
        directory: Created if needed.
        labels: Label names by class id, written to ``config.id2label`` (default HARE-RE's:
            ``NO_REL`` at index 0, then ``Relation``).
        seed: Torch seed of the initialisation.

    Returns:
        The directory, loadable as ``hare-re:<directory>`` by :mod:`pathgls.hare`.
    """
    from transformers import BertForSequenceClassification

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _wordpiece_tokenizer(512)
    tokenizer.add_special_tokens({"additional_special_tokens": list(RE_MARKERS)})
    config = _tiny_bert_config(
        tokenizer,
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    torch.manual_seed(seed)
    return _save_tiny(BertForSequenceClassification(config).eval(), tokenizer, out)


def save_random_text_encoder(directory: str | os.PathLike[str], *, seed: int = 0) -> Path:
    """Save a tiny random BERT encoder (``BertModel``), as HARE-alignment is used: CLS vectors.

    Args:
        directory: Created if needed.
        seed: Torch seed of the initialisation.

    Returns:
        The directory, loadable with ``AutoModel`` and as ``hf-cls:<directory>`` by
        :mod:`pathgls.hare` (2 layers, hidden 32, the tiny WordPiece tokenizer).
    """
    from transformers import BertModel

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _wordpiece_tokenizer(512)
    torch.manual_seed(seed)
    return _save_tiny(BertModel(_tiny_bert_config(tokenizer)).eval(), tokenizer, out)


def _save_tiny(model: Any, tokenizer: Any, out: Path) -> Path:
    """Save a tiny random model with its tokenizer and mark the directory as random weights."""
    from pathgls.hub.hf import quiet_loading

    with quiet_loading():
        model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    mark_random(out)
    return out
