"""Triage: stars that discriminate within a window, and the few increments that deserve 🔴 tonight.

Stars are relative to the window, as an editor ranks a day's finds: the chosen increments' rank (the top third
2 points, the middle third 1; ranked by their own units' relevance first, then novelty, figures and support,
processors.increments.evaluate), their support (a second writer, a paper card, an anchor, or a
living-document section they extend: 1) and what they add (a new paper, or figures the living document does not
have yet: 1), on top of 2; between 2 and 5. A window's best third can reach ⭐⭐⭐⭐⭐, the rest earn it by
support; a fill-in that adds nothing stays at ⭐⭐⭐ or below.

🔴 goes to at most `MAX_HIGHEST` increments, in rank order: new papers (an arXiv id nobody cites yet) at
⭐⭐⭐⭐⭐. 🟢 to increments of ⭐⭐⭐ or fewer (and the D-item annotations, processors.priorities); 🟡 to the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from processors.increments import Candidate, support
from processors.models import Increment, PriorityLevel

MAX_HIGHEST = 3


def star_ratings(chosen: Sequence[Candidate], extends: Callable[[Candidate], bool]) -> list[int]:
    """The stars of the chosen increments, in their order; `extends` tells whether one adds to a section the
    living document already has for its paper (its ids are cited there)."""
    by_rank = sorted(range(len(chosen)), key=lambda i: -chosen[i].score)
    third = max(1, math.ceil(len(chosen) / 3))
    rank_points = {i: 2 if at < third else 1 if at < 2 * third else 0 for at, i in enumerate(by_rank)}
    stars: list[int] = []
    for i, c in enumerate(chosen):
        backed = support(c.cluster) >= 0.5 or extends(c)
        adds = c.novelty == "new" or c.adds_figures
        stars.append(max(2, min(5, 2 + rank_points[i] + int(backed) + int(adds))))
    return stars


def levels(increments: Sequence[Increment]) -> list[PriorityLevel]:
    """The priority of each increment, in their order: 🔴 for the first few new papers at five stars."""
    out: list[PriorityLevel] = []
    highest = 0
    for inc in increments:
        if inc.stars <= 3:
            out.append("low")
        elif inc.novelty == "new" and inc.arxiv and inc.stars >= 5 and highest < MAX_HIGHEST:
            highest += 1
            out.append("highest")
        else:
            out.append("medium")
    return out
