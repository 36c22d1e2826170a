"""Large language models behind OpenAI-compatible chat endpoints.

:mod:`.client` is the HTTP client (timeouts, retries, secrets never logged);
:mod:`.json_chat` the one ask-for-JSON → validate → correct loop over it (the LLM extractor and
the LLM judge use it).

May import: core only.
"""
