"""Every secret shape the README lists, and the current token formats of the providers
and platforms it names, is redacted by ``tracer.vocab.redact.Redactor``; a near miss of each
stays intact. Pure and fast (no agent): ``mutmut`` runs this file (tests/README.md).

The agent-level tests (what lands in the database) are in ``test_tracer_redact.py``.
The keys below are made up, in the right shape.
"""

from __future__ import annotations

import json
import re

import pytest

from tracer.vocab.redact import DEFAULT_REDACTOR, MASK, SECRET_KEYS, Redactor

# Each test builds its own ``Redactor()``: the shared ``DEFAULT_REDACTOR`` was built
# when the module was imported (the writer uses it; it is checked to be the same at
# the end).

# name -> (a secret of that shape, a near miss that must be left as it is)
SHAPES: dict[str, tuple[str, str]] = {
    # OpenAI: legacy, project (the current default), service account, admin keys
    "openai legacy": ("sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6", "sk-" + "A1b2C3d4E5f6G7h"),
    "openai project": ("sk-proj-" + "Ab12Cd34_Ef56-Gh78Ij90Kl12Mn34Op56Qr78St90", "sk-proj-abc"),
    "openai service account": ("sk-svcacct-" + "Ab12Cd34Ef56Gh78Ij90Kl12", "sk-svcacct-"),
    "openai admin": ("sk-admin-" + "Ab12Cd34Ef56Gh78Ij90Kl12", "sk-admin-Ab12"),
    # Anthropic: API keys and admin keys
    "anthropic": ("sk-ant-api03-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2-Rr1_Qq0AA", "sk-ant-api"),
    "anthropic admin": ("sk-ant-admin01-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0AA", "sk-ant-ad"),
    "google": ("AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6", "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n"),
    "groq": ("gsk_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6", "gsk_" + "a" * 19),
    "slack bot": ("xoxb-" + "1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-123456789"),
    "slack user": ("xoxp-" + "1234567890-1234567890123-abcdef0123456789", "xoxq-1234567890-abc"),
    "slack refresh": ("xoxe-" + "1-My0xLTEyMzQ1Njc4OTAtMTIzNDU2", "xoxe-1-abc"),
    "slack app-level": ("xapp-" + "1-A0123456789-1234567890123-abcdef0123456789", "xapp-one-token"),
    "github classic": ("ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o"),
    "github oauth": ("gho_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "ghx_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    "github app": ("ghs_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "ghs-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    "github fine-grained": ("github_pat_" + "11ABCDEFG0123456789abc_" + "a" * 59,
                            "github_pat_" + "11ABCDEFG0123456789ab"),
    "hugging face": ("hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7", "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o"),
    "aws long-term": ("AKIA" + "IOSFODNN7EXAMPLE", "AKIA" + "IOSFODNN7EXAMPL"),
    "aws temporary": ("ASIA" + "IOSFODNN7EXAMPLE", "ASIA" + "iosfodnn7example"),
    "langsmith personal": ("lsv2_pt_" + "0123456789abcdef0123456789abcdef_0a1b2c3d4e", "lsv2_pt_0123"),
    "langsmith service": ("lsv2_sk_" + "0123456789abcdef0123456789abcdef_0a1b2c3d4e", "lsv2_s_" + "0" * 30),
}


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_every_key_shape_is_masked_and_its_near_miss_kept(kind: str) -> None:
    secret, near = SHAPES[kind]
    text = f"before {secret} after"
    assert Redactor()(text) == f"before {MASK} after"
    assert Redactor()(secret) == MASK  # alone, at the very start and end
    kept = f"before {near} after"
    assert Redactor()(kept) is kept  # (the same object: nothing found)


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_a_key_inside_json_text_is_masked(kind: str) -> None:
    """The redactor sees JSON: after an escape (a newline, a tab, a \\u escape), in a
    string value, next to punctuation."""
    secret, _ = SHAPES[kind]
    for value in (f"line one\n{secret}", f"tab\t{secret}", f"caf\u00e9{secret}",
                  f"({secret})", f"key={secret};", f'"{secret}"'):
        for ascii_only in (False, True):
            text = json.dumps({"content": value}, ensure_ascii=ascii_only)
            out = Redactor()(text)
            assert secret not in out and MASK in out, (value, out)
            assert json.loads(out)["content"] == value.replace(secret, MASK)


@pytest.mark.parametrize("word", [
    "the risk-assessment-framework-v2 document",  # "sk-" inside a word
    "task-scheduler-component-one", "desk-0123456789abcdefghij",
    "xAKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE2",  # not a 20-character key id
    "thf_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7", "nogsk_a1B2c3D4e5F6g7H8i9J0k1L2",
    "bearer: abcdefghijkl", "Bearer short", "a bear abcdefghijkl",
    "my-api-key is in the vault", "sk_live_is_stripe_not_openai",
])
def test_ordinary_text_is_left_alone(word: str) -> None:
    assert Redactor()(word) is word


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_bearer_tokens(scheme: str) -> None:
    token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"
    assert Redactor()(f"Authorization: {scheme} {token}") == f"Authorization: {scheme} {MASK}"
    assert Redactor()(f"{scheme} abc/+=:.-_9") == f"{scheme} {MASK}"
    kept = f"{scheme} abcdefg"  # 7 characters: not a token
    assert Redactor()(kept) is kept


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_the_value_of_every_secret_key_is_masked_whatever_it_looks_like(key: str) -> None:
    text = json.dumps({key: "hunter2 is plain", "note": "kept"})
    assert json.loads(Redactor()(text)) == {key: MASK, "note": "kept"}
    # any case, any spacing, escapes inside the value, nested objects
    upper = '{"outer": {"' + key.upper() + '" :  "a \\"quoted\\" secret\\\\"}, "n": 1}'
    assert json.loads(Redactor()(upper)) == {"outer": {key.upper(): MASK}, "n": 1}


@pytest.mark.parametrize("near", [
    '{"api_key_hint": "last four: 1234"}',  # a longer key name
    '{"secretary": "Jane"}', '{"my_password_policy": "12 characters"}',
    '{"api_key": 12345}',  # not a string: nothing to mask
    '{"note": "api_key"}',  # the key name as a value
    '"api_key" is a field name',
])
def test_keys_that_only_look_like_secret_keys_are_kept(near: str) -> None:
    assert Redactor()(near) is near


def test_every_readme_shape_is_in_this_file() -> None:
    """The tracing guide's list of providers (docs/guide/tracing.md, "Safety") is the list
    tested here."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "tracing.md").read_text(
        encoding="utf-8")
    listed = readme.split("**Secrets are redacted**", 1)[1].split("Add patterns", 1)[0]
    for provider in ("OpenAI", "Anthropic", "Google", "Groq", "Slack", "GitHub", "fine-grained",
                     "Hugging Face", "AWS", "LangSmith", "Bearer", "api_key", "authorization",
                     "x-api-key"):
        assert provider in listed, provider
        assert any(provider.lower() in k for k in SHAPES) or provider in (
            "Bearer", "api_key", "authorization", "x-api-key"), provider
    assert {"api_key", "authorization", "x-api-key"} <= set(SECRET_KEYS)


def test_extra_patterns_and_off() -> None:
    red = Redactor(extra_patterns=[r"ACME-\d{6}", r"internal-[a-z]+"])
    assert red("id ACME-123456 and internal-thing") == f"id {MASK} and {MASK}"
    kept = "id ACME-12345"
    assert red(kept) is kept
    # the defaults still apply next to the extra patterns
    assert red("k " + SHAPES["openai project"][0]) == f"k {MASK}"
    off = Redactor(enabled=False)
    secret = json.dumps({"api_key": "x", "t": SHAPES["openai project"][0]})
    assert off(secret) is secret
    assert Redactor()("") == ""
    assert Redactor()(None) is None  # type: ignore[arg-type]


def test_no_secret_means_the_same_object() -> None:
    """Callers rely on ``red(t) is t`` meaning nothing was found."""
    text = json.dumps({"content": "It is sunny in Oslo.", "key": "value"})
    assert Redactor()(text) is text
    assert Redactor(extra_patterns=["nothing-matches-this"])(text) is text


def test_many_secrets_in_one_text() -> None:
    secrets = [v[0] for v in SHAPES.values()]
    text = json.dumps({"api_key": "plain", "items": secrets, "auth": "Bearer abcdefghijkl"})
    out = json.loads(Redactor()(text))
    assert out == {"api_key": MASK, "items": [MASK] * len(secrets), "auth": f"Bearer {MASK}"}


def test_the_shared_redactor_is_a_default_one() -> None:
    texts = [f"k {v[0]} and {v[1]}" for v in SHAPES.values()]
    texts += ['{"api_key": "x", "note": "Bearer abcdefghijkl"}', "plain", ""]
    fresh = Redactor()
    assert [DEFAULT_REDACTOR(t) for t in texts] == [fresh(t) for t in texts]


class Spy:
    """Stands in for a compiled pattern: counts the scans."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.calls = pattern, 0

    def sub(self, *args: object) -> str:
        self.calls += 1
        return self.pattern.sub(*args)  # type: ignore[arg-type]


def test_texts_without_a_telltale_literal_skip_the_patterns() -> None:
    """Nearly every text holds no secret: the regular expressions (slow to scan) run
    only on a text holding one of the literals every match contains."""
    red = Redactor()
    red._values, red._keys = Spy(red._values), Spy(red._keys)  # type: ignore[assignment]
    plain = json.dumps({"content": "It is sunny in Oslo, 21 C.", "tool_call_id": "c1"})
    assert red(plain) is plain
    assert (red._values.calls, red._keys.calls) == (0, 0)  # type: ignore[attr-defined]
    with_key = json.dumps({"api_key": "x"})
    assert red(with_key) == '{"api_key": "[REDACTED]"}'
    assert (red._values.calls, red._keys.calls) == (0, 1)  # type: ignore[attr-defined]
    with_value = "token sk-" + "a" * 20
    assert red(with_value) == f"token {MASK}"
    assert (red._values.calls, red._keys.calls) == (1, 1)  # type: ignore[attr-defined]
    # several literals in one text: still one scan each
    both = json.dumps({"password": "p", "t": "sk-" + "b" * 20 + " AKIA" + "C" * 16})
    assert json.loads(red(both)) == {"password": MASK, "t": f"{MASK} {MASK}"}
    assert (red._values.calls, red._keys.calls) == (2, 2)  # type: ignore[attr-defined]


def test_no_extra_patterns_leave_text_alone() -> None:
    red = Redactor(extra_patterns=[])
    assert red._extra is None
    assert red("abc") == "abc"
    assert Redactor(extra_patterns=iter([r"x\d"]))("x1 y2") == f"{MASK} y2"  # any iterable
