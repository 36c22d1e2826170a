"""Large language models behind OpenAI-compatible chat endpoints.

:mod:`.client` is the HTTP client (timeouts, retries, secrets never logged).

May import: core only.
"""
