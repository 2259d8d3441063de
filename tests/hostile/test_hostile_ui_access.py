"""The app's door in pure form (``app/kit/access.py``): which Host and Origin headers name
this server, and how wrong passwords are limited. The real server meets the same
clients in ``test_hostile_ui_server.py``.

Written against issue 36 (round two): every Host was served (DNS rebinding), and a
session could guess the password as fast as the server answered, the right one
working at once after any number of wrong ones."""

from __future__ import annotations

import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from app.kit.access import FORGET, Limiter, attempt, host_allowed, origin_allowed

OCTET = r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
LABELS = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,12}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,12}"
                       r"[a-z0-9])?){0,3}\.?", fullmatch=True)
PORTS = st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}"))


def loopback_v4(name: str) -> bool:
    """127.x.y.z written the one way ipaddress accepts (no leading zeros)."""
    return re.fullmatch(rf"127(\.{OCTET}){{3}}", name) is not None


@settings(max_examples=300, deadline=None)
@given(name=LABELS, port=PORTS, case=st.booleans())
def test_a_name_is_a_host_only_if_it_is_this_machine(name: str, port: str, case: bool) -> None:
    shown = name.upper() if case else name
    bare = name.rstrip(".")
    expected = bare == "localhost" or loopback_v4(bare)
    assert host_allowed(shown + port, "127.0.0.1") is expected
    assert host_allowed(shown + port, "localhost") is expected
    assert origin_allowed(f"http://{shown}{port}", "127.0.0.1") is expected
    # what a rebinding page's name looks like: refused whatever it starts with
    assert not host_allowed(f"{shown}.evil.example{port}", "127.0.0.1")
    assert not host_allowed(f"{shown}{port}@evil.example", "127.0.0.1")


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=40), bound=st.sampled_from(["127.0.0.1", "0.0.0.0", "::1",
                                                         "10.0.0.5", "box.lan", ""]))
def test_any_header_is_judged_without_an_error(text: str, bound: str) -> None:
    assert host_allowed(text, bound) in (True, False)
    assert origin_allowed(text, bound) in (True, False)


@settings(max_examples=200, deadline=None)
@given(a=st.integers(0, 255), b=st.integers(0, 255), c=st.integers(0, 255),
       d=st.integers(0, 255), port=PORTS)
def test_addresses(a: int, b: int, c: int, d: int, port: str) -> None:
    ip = f"{a}.{b}.{c}.{d}"
    assert host_allowed(ip + port, "127.0.0.1") is (a == 127)
    assert host_allowed(ip + port, "0.0.0.0") is True  # (an address is no rebinding)
    assert host_allowed(ip + port, "10.0.0.5") is (a == 127 or ip == "10.0.0.5")


def test_examples() -> None:
    for host in ("localhost:8501", "LOCALHOST", "localhost.", "127.0.0.1:8501", "[::1]:8501",
                 "[0:0::1]", "127.255.0.3"):
        assert host_allowed(host, "127.0.0.1"), host
    for host in ("evil.example:8501", "", None, "localhost.evil.example", "127.0.0.1.nip.io",
                 "[::1", "127.0.0.1:0x50", "user:pw@127.0.0.1", "127.0.0.1/x", "0.0.0.0",
                 "[::]:8501", "localhost:99999"):
        assert not host_allowed(host, "127.0.0.1"), host
    assert host_allowed("box.lan:8501", "box.lan") and not host_allowed("box.lan", "10.0.0.5")
    assert host_allowed("[2001:db8::1]:80", "2001:db8:0::1")
    assert origin_allowed(None, "127.0.0.1")  # (not a browser)
    for origin in ("null", "file://", "http://evil.example:8501", "ws://localhost:8501",
                   "http://localhost.evil.example"):
        assert not origin_allowed(origin, "127.0.0.1"), origin
    assert origin_allowed("https://localhost:8501", "127.0.0.1")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_hundred_quick_guesses_then_the_right_password() -> None:
    clock = Clock()
    limiter = Limiter(clock)
    keys = ("session a", "address 10.0.0.9")
    outcomes = []
    for i in range(100):  # one every 70 ms: 7 s
        outcomes.append(attempt(f"guess {i}", "right", keys, "test", limiter))
        clock.now += 0.07
    # 3 free; the 4th (t=0.21) locks for 2 s; the next compared (t=2.24) for 4 s, then
    # (t=6.30) for 8 s
    assert [i for i, o in enumerate(outcomes) if o == "wrong"] == [0, 1, 2, 3, 32, 90]
    assert outcomes[4] == "wait 2" and outcomes[33] == "wait 4" and outcomes[91] == "wait 8"
    # the right password, at once (t=7.0, locked till 14.30): not even compared
    assert attempt("right", "right", keys, "test", limiter) == "wait 8"
    # the other session from the same address waits too; another address does not
    assert attempt("right", "right", ("session b", "address 10.0.0.9"), "test",
                   limiter).startswith("wait ")
    assert attempt("right", "right", ("session c", "address 10.0.0.10"), "test", limiter) == "ok"
    clock.now = 1000.0 + 14.35
    assert attempt("right", "right", keys, "test", limiter) == "ok"
    # let in: the counts start again
    assert [attempt("x", "right", keys, "test", limiter) for _ in range(4)] == ["wrong"] * 4
    clock.now += 2.01
    assert attempt("right", "right", keys, "test", limiter) == "ok"


def test_the_lockout_grows_to_its_cap_and_is_forgotten() -> None:
    clock = Clock()
    limiter = Limiter(clock)
    waits = []
    for _ in range(20):  # each guess as soon as allowed
        assert attempt("x", "right", ("k",), "test", limiter) == "wrong"
        waits.append(limiter.wait("k"))
        clock.now += waits[-1]
    assert waits == [0, 0, 0, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900, 900, 900,
                     900, 900, 900]
    clock.now += FORGET + 1
    assert attempt("x", "right", ("k",), "test", limiter) == "wrong"
    assert limiter.wait("k") == 0  # (the count started again: 1 in a row)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.tuples(st.one_of(st.just(0.0), st.floats(0, 3), st.floats(0, 60)),
                                st.booleans()), max_size=40))
def test_guesses_in_any_rhythm_stay_few(steps: list[tuple[float, bool]]) -> None:
    """However the guesses are spaced, in E seconds from the first at most
    3 + log2(E + 2) wrong ones are compared (while the lockouts double: E < 1022 s),
    and the right password is never called wrong."""
    clock = Clock()
    limiter = Limiter(clock)
    start = clock.now
    compared = 0
    for gap, right in steps:
        clock.now += gap
        out = attempt("right" if right else f"guess {clock.now}", "right", ("k",), "t",
                      limiter)
        if right:
            assert out == "ok" or out.startswith("wait ")
            if out == "ok":
                start, compared = clock.now, 0  # (let in: counts start again)
            continue
        assert out == "wrong" or out.startswith("wait ")
        if out == "wrong":
            compared += 1
            elapsed = clock.now - start if compared > 1 else 0.0
            if compared == 1:
                start = clock.now
            if elapsed < 1022:
                assert compared <= 3 + math.floor(math.log2(elapsed + 2)), (compared, elapsed)
