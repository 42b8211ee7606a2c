"""Reason codes: why a file is rejected or warned about, why a source yields no increment, how relevant it is.

Codes are what code compares, metrics label and the JSON carries; the words a reader sees are looked up per
language in processors.i18n. Rejection and warning codes are the metric label values dashboards and alerts
use (deploy/prometheus, deploy/grafana): renaming one is a breaking change for them.
"""

from __future__ import annotations

from typing import Literal, get_args

# Files refused at the door (`predigest_documents_rejected_total{reason}`, `rejected[].reason_code`): by the
# parse stage (binary … parse) or by the watcher before reading (outside … vanished); and a stored note a briefing
# could not read back (damaged: `rejected[]` only, counted by `predigest_stored_notes_unreadable_total`).
RejectionCode = Literal[
    "binary",  # NUL bytes
    "limit",  # over the size limit, or its parse over the message limit
    "empty",  # nothing but white space (usually caught between create and first write)
    "outside",  # resolves outside the root (a symlinked folder)
    "symlink",  # a symlink
    "special",  # not a regular file (FIFO, socket, device)
    "unreadable",  # the OS refused to read it
    "vanished",  # gone before it could be read
    "bad_name",  # its name (or a folder's on the way) is not valid UTF-8: listed escaped, never read
    "parse",  # anything else the parser could not turn into a document
    "damaged",  # stored, but its text does not read back (a body frame not unpacking to its size, or not UTF-8)
    "row_missing",  # stored, but its `contents` or `source_rows` row is missing from the state (a rebuild restores)
]
REJECTION_CODES: tuple[RejectionCode, ...] = get_args(RejectionCode)
# The stored notes a briefing could not read back: listed among its rejected, and nowhere else.
UNREAD_CODES: frozenset[RejectionCode] = frozenset({"damaged", "row_missing"})

# Documents kept with a warning (`predigest_documents_warned_total{reason}`, `sources[].warning_codes`).
WarningCode = Literal[
    "decode",  # not valid UTF-8: decoded as GB18030, or with replacement characters
    "front_matter",  # front matter unreadable, not a mapping, too large, unclosed, or a bad date
    "no_stamp",  # no date in the name or front matter: event time from the mtime
    "arxiv_id",  # something written as an arXiv id that is not one; a card name without an id
    "many_ids",  # cites more arXiv ids than a briefing lists of one note: the first ones are listed
]
WARNING_CODES: tuple[WarningCode, ...] = get_args(WarningCode)

# Why a source of the window yields no increment for an axis (六, `no_increment_sources[].code`).
NoIncrementCode = Literal[
    "not_selected",  # had candidates, ranked below the chosen increments
    "covered",  # every id it cites is already anchored
    "no_content",  # on the axis, but nothing an editor could add
    "adjacent",  # mainly about another configured axis
    "low",  # too far from the axis profile
    "duplicate",  # the same (or nearly the same) text as an earlier source
    "baseline",  # this axis's earlier briefing
    "reference",  # another axis's briefing
    "work_queue",  # the writers' task queue
]
NO_INCREMENT_CODES: tuple[NoIncrementCode, ...] = get_args(NoIncrementCode)

# How much a source matters to an axis (`sources[].relevance.code`): scored, or a role.
RelevanceCode = Literal["very_high", "high", "medium", "low", "baseline", "reference", "adjacent"]
RELEVANCE_CODES: tuple[RelevanceCode, ...] = get_args(RelevanceCode)
ROLE_CODES: frozenset[RelevanceCode] = frozenset({"baseline", "reference", "adjacent"})
