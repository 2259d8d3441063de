"""The colours of a run's views (``tracer.read.palette``): a tool call's colour never
reads as a kind with a meaning of its own (issue 39, item 10: on the Timeline a
successful ``apply_discount`` bar, the fifth call's colour, was nearly the legend's error
red). Distances are CIEDE2000, computed here from the sRGB values."""

from __future__ import annotations

import itertools
import math

from tracer.read.palette import CALL_COLOURS, HIGHLIGHT, KIND_COLOURS

# CIEDE2000: about 2 is a just-noticeable difference, above 30 colours that no one takes
# for each other at a glance.
APART_FROM_ERROR = 30.0
APART_FROM_MARKS = 20.0  # the interrupt amber (also the highlight)
APART_FROM_HOOKS = 15.0  # the hooks' grey (a lane of its own)
APART_FROM_EACH_OTHER = 12.0


def _lab(hex_colour: str) -> tuple[float, float, float]:
    rgb = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb)
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def delta_e(c1: str, c2: str) -> float:
    """CIEDE2000 (Sharma, Wu and Dalal's formulation)."""
    (l1, a1, b1), (l2, a2, b2) = _lab(c1), _lab(c2)
    cb = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(cb ** 7 / (cb ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360
    h2p = math.degrees(math.atan2(b2, a2p)) % 360
    dh = 0.0 if c1p * c2p == 0 else (h2p - h1p + 180) % 360 - 180
    d_hp = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    lbp, cbp = (l1 + l2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        hbp = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        hbp = (h1p + h2p) / 2
    else:
        hbp = (h1p + h2p + (360 if h1p + h2p < 360 else -360)) / 2
    t = (1 - 0.17 * math.cos(math.radians(hbp - 30)) + 0.24 * math.cos(math.radians(2 * hbp))
         + 0.32 * math.cos(math.radians(3 * hbp + 6)) - 0.20 * math.cos(math.radians(4 * hbp - 63)))
    rc = 2 * math.sqrt(cbp ** 7 / (cbp ** 7 + 25 ** 7))
    rt = -math.sin(math.radians(60 * math.exp(-(((hbp - 275) / 25) ** 2)))) * rc
    sl = 1 + 0.015 * (lbp - 50) ** 2 / math.sqrt(20 + (lbp - 50) ** 2)
    sc, sh = 1 + 0.045 * cbp, 1 + 0.015 * cbp * t
    dl, dc, dhh = (l2 - l1) / sl, (c2p - c1p) / sc, d_hp / sh
    return math.sqrt(dl ** 2 + dc ** 2 + dhh ** 2 + rt * dc * dhh)


def test_delta_e_behaves() -> None:
    """The distance is 0 to itself, symmetric, 100 from black to white, and the old
    fifth call colour (a pink) was too near the error red."""
    assert delta_e("#e03131", "#e03131") == 0
    assert math.isclose(delta_e("#1f77b4", "#e03131"), delta_e("#e03131", "#1f77b4"))
    assert delta_e("#000000", "#ffffff") > 99  # (100: black to white)
    assert delta_e("#d6336c", "#e03131") < APART_FROM_ERROR  # (the old fifth colour)


def test_no_call_colour_reads_as_an_error_or_an_interrupt() -> None:
    for c in CALL_COLOURS:
        assert delta_e(c, KIND_COLOURS["error"]) >= APART_FROM_ERROR, c
        for mark in (KIND_COLOURS["interrupt"], HIGHLIGHT):
            assert delta_e(c, mark) >= APART_FROM_MARKS, (c, mark)
        assert delta_e(c, KIND_COLOURS["hook"]) >= APART_FROM_HOOKS, c


def test_call_colours_are_told_apart() -> None:
    assert len(set(CALL_COLOURS)) == len(CALL_COLOURS) == 8
    for a, b in itertools.combinations(CALL_COLOURS, 2):
        assert delta_e(a, b) >= APART_FROM_EACH_OTHER, (a, b)
