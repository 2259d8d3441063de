"""The providers whose wire formats and protocol rules looptrace knows, by name.

Vocabulary: the checks name a provider's rules by it, the wire package renders each
one's format (``tracer.wire.providers``), neither needs the other to say which exist.
"""

PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "ollama")

__all__ = ["PROVIDERS"]
