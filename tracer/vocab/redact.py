"""Secret redaction, applied to every JSON text before it is written.

On by default. Add patterns with ``Redactor(extra_patterns=[...])`` or turn it
off with ``TraceMiddleware(..., redact=False)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "[REDACTED]"

# Values that look like credentials wherever they appear. Each starts where a word
# starts (``desk-...`` or ``risk-assessment-...`` hold no ``sk-`` key); the texts are
# JSON, so a key right after an escape (``\n``, ``\t``, ``\u00e9``) starts a word too.
_B = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrtbf])|(?<=\\u[0-9a-fA-F]{4}))"
DEFAULT_PATTERNS: tuple[str, ...] = (
    _B + r"sk-ant-[A-Za-z0-9_\-]{8,}",  # Anthropic (sk-ant-api03-..., admin keys sk-ant-admin01-...)
    _B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",  # OpenAI (project, service account)
    _B + r"AIza[0-9A-Za-z_\-]{30,}",  # Google
    _B + r"gsk_[A-Za-z0-9]{20,}",  # Groq
    _B + r"xox[abeprs]-[A-Za-z0-9\-]{10,}",  # Slack bot, user, refresh ... tokens
    _B + r"xapp-\d-[A-Za-z0-9\-]{10,}",  # Slack app-level token
    _B + r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    _B + r"github_pat_[A-Za-z0-9_]{22,}",  # GitHub fine-grained personal access token
    _B + r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
    _B + r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])",  # AWS access key id (long-term, temporary)
    _B + r"lsv2_[a-z]{2}_[A-Za-z0-9_]{20,}",  # LangSmith
    r"(?<=[Bb]earer )[A-Za-z0-9_\-\.=:/+]{8,}",  # Authorization: Bearer <token>
    r"(?<=BEARER )[A-Za-z0-9_\-\.=:/+]{8,}",
)

# JSON keys whose string values are always secrets, whatever they look like.
SECRET_KEYS = (
    "api_key", "api-key", "apikey", "x-api-key", "authorization", "proxy-authorization",
    "openai_api_key", "anthropic_api_key", "password", "secret", "access_token",
    "refresh_token", "client_secret", "cookie", "set-cookie",
)


# More JSON keys that are secrets in a request body sent to a provider (where a
# "token" is a credential; in a model's answer it can be a logprob's token).
REQUEST_SECRET_KEYS = (
    "token", "auth_token", "id_token", "session_token", "bearer_token", "private_key",
    "passwd", "passphrase", "api_secret", "secret_key", "access_key", "credentials",
)


# A literal that every match of a default pattern contains: texts without any of them
# (nearly all) skip the regular expressions, which are slow to scan.
_DEFAULT_LITERALS: tuple[str, ...] = (
    "sk-", "AIza", "gsk_", "xox", "xapp-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
    "github_pat_", "hf_", "AKIA", "ASIA", "lsv2_", "earer ", "EARER ",
)
# The same test in one scan of the text (the literals as one alternation: about a third
# cheaper than a search for each, on the few hundred characters of a message's JSON).
_ANY_LITERAL = re.compile("|".join(re.escape(p) for p in _DEFAULT_LITERALS))


def _key_tails(names: Iterable[str]) -> tuple[str, ...]:
    """Fewer literals that every ``"name"`` of ``names`` contains: the last seven
    characters of each (its closing quote included), a tail that ends another left
    out (``secret"`` serves ``"secret"`` and ``"client_secret"``). A text holding none
    of them holds no secret key; one that holds one is searched by the key pattern,
    which decides."""
    tails: list[str] = []
    for t in sorted({f'"{n}"'[-7:] for n in names}, key=len):
        if not any(t.endswith(k) for k in tails):
            tails.append(t)
    return tuple(tails)


class Redactor:
    """Replace secrets in a JSON text with ``[REDACTED]``."""

    def __init__(self, *, extra_patterns: Iterable[str] = (), extra_keys: Iterable[str] = (),
                 enabled: bool = True) -> None:
        self.enabled = enabled
        self._values = re.compile("|".join(f"(?:{p})" for p in DEFAULT_PATTERNS))
        extra = list(extra_patterns)
        self._extra = re.compile("|".join(f"(?:{p})" for p in extra)) if extra else None
        names = [*SECRET_KEYS, *(k.lower() for k in extra_keys)]
        keys = "|".join(re.escape(k) for k in names)
        self._keys = re.compile(
            rf'("(?i:{keys})"\s*:\s*")((?:[^"\\]|\\.)*)(")'
        )
        self._key_tails = _key_tails(k.lower() for k in names)

    def __call__(self, text: str) -> str:
        """``text`` with its secrets masked; the very same object when it has none
        (callers rely on that: ``red(t) is t`` says nothing was found)."""
        if not self.enabled or not text:
            return text
        # (plain loops: this runs for every record, and most texts hold none of these)
        low = text.lower()
        for k in self._key_tails:
            if k in low:
                text = self._keys.sub(lambda m: m.group(1) + MASK + m.group(3), text)
                break
        if _ANY_LITERAL.search(text) is not None:
            text = self._values.sub(MASK, text)
        if self._extra is not None:
            text = self._extra.sub(MASK, text)
        return text


DEFAULT_REDACTOR = Redactor()
