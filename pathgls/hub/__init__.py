"""Models on disk: which models exist, where their weights live, how they are pulled and run.

:mod:`.cards` is the model card table (``resources/models.toml``: repo, pinned revision,
licence, kind of every model pathgls can load by name); :mod:`.store` finds a model's local
copy (models directory, then the Hugging Face cache) and pulls it explicitly; :mod:`.hf` loads
Hugging Face checkpoints the same way everywhere; :mod:`.device` resolves ``auto`` devices and
precisions. pathgls never downloads implicitly.

May import: :mod:`pathgls.errors`, :mod:`pathgls.registry`, :mod:`pathgls.io`.
"""
