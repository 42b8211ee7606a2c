"""Routing a raw file to its axes (processors.fan_out)."""

from __future__ import annotations

from processors.fan_out import keyword_terms
from processors.models import AxisSpec
from processors.tokens import axis_terms


def test_the_keyword_terms_are_those_of_the_axes_asked_for_each_time() -> None:
    # The last axes asked for are remembered: another configuration in the same process must not get them.
    kv = (AxisSpec(name="inference", keywords=("vLLM", "KV cache")),)
    risk = (AxisSpec(name="risk", keywords=("jailbreak",)),)
    for axes in (kv, risk, kv, (AxisSpec(name="risk", keywords=("jailbreak",)),)):
        assert keyword_terms(axes) == frozenset(t for a in axes for t in axis_terms(a.keywords, a.name))
    assert keyword_terms(kv) != keyword_terms(risk)
