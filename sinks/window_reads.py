"""A stored axis window as a briefing reads it (processors.window_rows): rows streamed, window figures in DuckDB.

Its sources are pinned when it is opened (a temporary table of their versions, in window order, made under the
state's lock), so that a briefing reads one window however the worker goes on writing meanwhile: versions are
never rewritten. Every
read goes through one cursor of its own, from the briefing's thread; `close()` drops it all.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence

import duckdb
from predigest_native import near_candidates, near_same
from pydantic_core import from_json

from processors.errors import MissingRowError
from processors.id_titles import TITLE_FROM
from processors.models import Document, TitledId, WindowBounds
from processors.near_duplicates import (
    NUM_PERM,
    DuplicateOf,
    check_threshold,
    group_near,
    lsh_bands,
    merge_groups,
    similarity,
)
from processors.window_rows import SourceRow, StatedTitles, WindowStatistics
from processors.wire import load_summary
from sinks.documents import IN_WINDOW
from sinks.duck_close import close_interrupting
from sinks.summary_rows import SUMMARY_COLUMNS, with_rows
from sinks.unreadable import Unreadable, whole_documents

log = logging.getLogger(__name__)

_FETCH = 1024  # rows per fetch: the briefing holds this many summaries at a time
_SUPERSEDED = "d.axis=? AND NOT d.current AND d.kind <> 'living' AND d.event_time >= ? AND d.event_time < ?"
# A version pinned for the briefing: its place in window order, its source facts' id, what duplicates need. A
# version without its source row (NULL vid) is pinned apart, its places their own, to be listed damaged.
_PINNED = (
    "(row_number() OVER (PARTITION BY r.vid IS NULL ORDER BY d.event_time, d.path) - 1)::BIGINT AS pos, r.vid, "
    "d.path, d.kind, r.text_hash, r.length, false AS dup "
    "FROM documents d LEFT JOIN source_rows r ON r.path = d.path AND r.sha256 = d.sha256"
)
_NO_SOURCE_ROW = MissingRowError("its source row is missing from the state")


# Each pinned version's counts of the profile terms (the parameter), as one JSON object: DuckDB hands a pair of
# lists to Python several times slower than a string that pydantic_core then parses.
_HITS = (
    "SELECT t.vid, json_group_object(t.term, t.n)::VARCHAR AS hits FROM source_terms t "
    "WHERE t.vid IN (SELECT vid FROM {w}) AND t.term IN (SELECT unnest(?::VARCHAR[])) GROUP BY t.vid"
)
# Of the pairs the kept sources state (source_titles): the best of each id (processors.id_titles.BestTitles:
# rank, strong before weak, then the first stated) and the first statement of each (id, title) within its
# document's bound (processors.id_conflicts.BoundedTitles). The rest could never win either.
_STATED = (
    "WITH t AS (SELECT w.pos, t.* FROM source_titles t JOIN {w} w ON w.vid = t.vid "
    "  WHERE w.path NOT IN (SELECT unnest($1::VARCHAR[]))) "
    "SELECT pos, n, id, title, source, strong, rank, true AS best FROM t WHERE rank >= $2 "
    "  QUALIFY row_number() OVER (PARTITION BY id ORDER BY rank DESC, strong DESC, pos, n) = 1 "
    "UNION ALL "
    "SELECT pos, n, id, title, source, strong, rank, false FROM t WHERE bounded "
    "  QUALIFY row_number() OVER (PARTITION BY mark_id, mark_title ORDER BY pos, n) = 1"
)


def _slots_needed(threshold: float) -> int:
    """The fewest equal slots of two signatures whose estimated Jaccard (equal slots / NUM_PERM) reaches
    `threshold`, as `find_duplicates` compares it."""
    return next((n for n in range(NUM_PERM + 1) if n / NUM_PERM >= threshold), NUM_PERM + 1)


class StoredWindow:
    """The sources of one axis window in the state: its current versions dated in it, plus `baseline`."""

    def __init__(
        self,
        cursor: duckdb.DuckDBPyConnection,
        axis: str,
        window: WindowBounds,
        baseline: tuple[str, str] | None = None,  # (path, sha256) of yesterday's briefing, dated before it
        unreadable: Unreadable | None = None,  # where the notes `load` cannot read are reported
    ) -> None:
        self._db = cursor
        self._axis = axis
        self.unreadable = unreadable or Unreadable()
        self._window = window
        self._baseline = baseline
        self._w = f"brief_window_{uuid.uuid4().hex}"
        self._s = f"brief_superseded_{uuid.uuid4().hex}"
        path, sha = baseline or ("", "")
        try:
            self._db.execute(
                f"CREATE TEMP TABLE {self._w} AS SELECT {_PINNED} "
                f"WHERE ({IN_WINDOW}) OR (d.axis = ? AND d.path = ? AND d.sha256 = ? AND d.kind = 'baseline')",
                [axis, window.start, window.end, axis, path, sha],
            )
            self._db.execute(
                f"CREATE TEMP TABLE {self._s} AS SELECT {_PINNED} WHERE {_SUPERSEDED}",
                [axis, window.start, window.end],
            )
            self._set_apart()
        except BaseException:
            # Its temporary tables live as long as the cursor: not until the failure is collected (a command out of
            # memory is retried, then dead-lettered, the worker up).
            with contextlib.suppress(duckdb.Error):  # closed with the state meanwhile
                cursor.close()
            raise

    def _set_apart(self) -> None:
        """The window's versions without a source row unpinned and reported (the briefing lists them damaged); a
        superseded one only when nothing else of its note is pinned (else the note is listed as that)."""
        apart = self._db.execute(
            f"SELECT path, true FROM {self._w} WHERE vid IS NULL UNION ALL "
            f"SELECT path, false FROM {self._s} WHERE vid IS NULL"
        ).fetchall()
        for pinned in {self._w if current else self._s for _, current in apart}:
            self._db.execute(f"DELETE FROM {pinned} WHERE vid IS NULL")
        superseded = [path for path, current in apart if not current]
        listed = self._pinned(superseded) if superseded else set()
        for path in dict.fromkeys(p for p, current in apart if current or p not in listed):
            self.unreadable.report(path, self._axis, _NO_SOURCE_ROW)

    def _pinned(self, paths: Sequence[str]) -> set[str]:
        """Which of `paths` the window pins a version of, current or superseded."""
        rows = self._db.execute(
            f"SELECT path FROM {self._w} WHERE path = ANY($1) UNION SELECT path FROM {self._s} WHERE path = ANY($1)",
            [list(paths)],
        ).fetchall()
        return {str(p) for (p,) in rows}

    def close(self) -> None:
        """Close the window's cursor, interrupting a read still running on it (the thread of a cancelled
        briefing); one that does not stop is closed with the state."""
        if not close_interrupting(
            self._db, what=f"the cursor of a briefing's read of the {self._axis} window"
        ):
            log.warning(
                "a cancelled briefing's read of the %s window still runs: closed with the state", self._axis
            )

    def reads_on(self, cursor: duckdb.DuckDBPyConnection) -> bool:
        """Whether the window reads through this cursor."""
        return cursor is self._db

    def size(self) -> int:
        row = self._db.execute(f"SELECT count(*) FROM {self._w}").fetchone()
        return int(row[0]) if row else 0

    def duplicates(self, threshold: float) -> dict[str, DuplicateOf]:
        check_threshold(threshold)
        exact = dict(
            self._db.execute(
                f"SELECT path, kept FROM (SELECT path, first_value(path) OVER (PARTITION BY text_hash "
                f"ORDER BY pos) AS kept FROM {self._w}) WHERE kept <> path"
            ).fetchall()
        )
        found = self._near(threshold)
        candidates: dict[str, dict[str, float]] = {}
        at: dict[str, int] = {}
        for one, one_at, other, other_at, same in found:
            candidates.setdefault(one, {})[other] = same / NUM_PERM
            at[one], at[other] = one_at, other_at
        near = group_near(sorted(at, key=at.__getitem__), candidates, threshold)
        open_pairs = [(key, n.kept) for key, n in near.items() if n.similarity is None]
        return merge_groups(exact, near, self._similarities(open_pairs, at))

    def _near(self, threshold: float) -> list[tuple[str, int, str, int, int]]:
        """(path, pos, earlier path, pos, equal slots) of each pair of near duplicates at `threshold`: the first
        version of each text, when its signature is whole, compared with the first of each of its LSH buckets,
        when earlier (find_duplicates). Natively, from the signatures as DuckDB hands them over (Arrow): as SQL,
        the plans of its 128-slot expressions alone cost ~60 ms a briefing, whatever the window's size."""
        bands, rows = lsh_bands(threshold, NUM_PERM)
        firsts = self._db.sql(
            f"SELECT f.pos, s.signature FROM (SELECT pos, vid FROM {self._w} "
            "QUALIFY pos = min(pos) OVER (PARTITION BY text_hash)) f JOIN source_signatures s ON s.vid = f.vid"
        )
        # A 100k window's buckets pair ~600k sources, nearly all far below the threshold: their 2-bit sketches
        # weed them out, and only the ~11k left have their signatures read again, whole.
        pairs = near_candidates(firsts, bands, rows, _slots_needed(threshold))
        if not pairs:
            return []
        signatures = self._db.sql(
            f"SELECT w.pos, s.signature FROM {self._w} w JOIN source_signatures s ON s.vid = w.vid "
            "WHERE w.pos = ANY($1::BIGINT[])",
            params=[sorted({p for pair in pairs for p in pair})],
        )
        found = [(x, y, same) for x, y, same in near_same(signatures, pairs) if same / NUM_PERM >= threshold]
        paths = dict(
            self._db.execute(
                f"SELECT pos, path FROM {self._w} WHERE pos = ANY($1::BIGINT[])",
                [sorted({p for x, y, _ in found for p in (x, y)})],
            ).fetchall()
        )
        return [(paths[x], x, paths[y], y, same) for x, y, same in found]

    def _similarities(
        self, pairs: Sequence[tuple[str, str]], at: Mapping[str, int]
    ) -> dict[tuple[str, str], float]:
        """The estimated Jaccard of each pair of compared sources (paths, at their window positions `at`), from
        their signatures read whole: a join of the slot columns read all of the window's (~40 ms at 10k for
        the few dozen pairs a window leaves open)."""
        if not pairs:
            return {}
        rows = self._db.execute(
            f"SELECT w.pos, s.signature FROM {self._w} w JOIN source_signatures s ON s.vid = w.vid "
            "WHERE w.pos = ANY($1::BIGINT[])",
            [sorted({at[path] for pair in pairs for path in pair})],
        ).fetchall()
        signatures: dict[int, list[int]] = dict(rows)
        return {(a, b): similarity(signatures[at[a]], signatures[at[b]]) for a, b in pairs}

    def statistics(self, left_out: Collection[str]) -> WindowStatistics:
        self._db.execute(f"UPDATE {self._w} SET dup = false")
        if left_out:
            self._db.execute(
                f"UPDATE {self._w} SET dup = true WHERE path IN (SELECT unnest($1))", [list(left_out)]
            )
        row = self._db.execute(
            f"SELECT count(*), coalesce(sum(length) FILTER (WHERE length > 0), 0), "
            f"count(*) FILTER (WHERE length > 0) FROM {self._w} WHERE NOT dup"
        ).fetchone()
        documents, total, used = (int(v) for v in row) if row else (0, 0, 0)
        return WindowStatistics(
            documents=documents,
            # As Python divides: the exact sum of the lengths, then one division.
            average_length=total / used if used else 1.0,
            frequencies=self._frequencies,
        )

    def _frequencies(self, terms: Collection[str]) -> dict[str, int]:
        """How many of the window's kept sources (`statistics`) count each term."""
        rows = self._db.execute(
            f"SELECT t.term, count(*) FROM source_terms t JOIN {self._w} w ON w.vid = t.vid AND NOT w.dup "
            "WHERE t.term IN (SELECT unnest($1)) GROUP BY t.term",
            [list(terms)],
        ).fetchall()
        return {str(t): int(n) for t, n in rows}

    def rows(self, profile: Collection[str]) -> Iterator[SourceRow]:
        return self._rows(self._w, profile)

    def superseded(self, profile: Collection[str]) -> list[SourceRow]:
        return list(self._rows(self._s, profile))

    def _rows(self, pinned: str, profile: Collection[str]) -> Iterator[SourceRow]:
        """The pinned versions with their summaries and counts of the profile terms, streamed as DuckDB
        produces them (no sort: each row knows its place)."""
        cursor = self._db.execute(
            f"WITH h AS ({_HITS.format(w=pinned)}) "
            f"SELECT p.pos, r.summary_json, p.length, r.counted, r.topic, h.hits FROM {pinned} p "
            "JOIN source_rows r ON r.vid = p.vid LEFT JOIN h ON h.vid = p.vid",
            [sorted(profile)],
        )
        while chunk := cursor.fetchmany(_FETCH):
            for position, summary, length, counted, topic, hits in chunk:
                counts = from_json(hits) if hits else {}
                yield SourceRow(
                    int(position), load_summary(summary), int(length), counts, bool(counted), topic
                )

    def load(self, paths: Sequence[str]) -> list[Document]:
        """The window's sources at `paths`, whole, as pinned (a path not among them is left out)."""
        if not paths:
            return []
        # The paths also filter the scan of `contents` itself (DuckDB cannot push a join's keys into it): its
        # other rows are then never joined, and their summaries never read.
        rows = self._db.execute(
            f"SELECT k.path, $2, {SUMMARY_COLUMNS.replace('r.', 'k.')} FROM "
            "(SELECT w.pos, r.vid, r.path, r.sha256, r.summary_json "
            f"FROM {self._w} w JOIN source_rows r ON r.vid = w.vid WHERE w.path IN (SELECT unnest($1))) k "
            "LEFT JOIN contents c ON c.path = k.path AND c.sha256 = k.sha256 AND c.path = ANY($1::VARCHAR[]) "
            "ORDER BY k.pos",
            [list(paths), self._axis],
        ).fetchall()
        return whole_documents(with_rows(self._db, rows), self.unreadable)

    def arxiv_ids(self) -> list[str]:
        # In DuckDB, one row per id (ordered by its first source, then its place there): handing every source's
        # list to Python took over a second for a 100k window.
        rows = self._db.execute(
            "SELECT id FROM (SELECT w.pos, unnest(r.arxiv_ids) AS id, generate_subscripts(r.arxiv_ids, 1) AS k "
            f"FROM {self._w} w JOIN source_rows r ON r.vid = w.vid) GROUP BY id ORDER BY min(pos), arg_min(k, pos)"
        ).fetchall()
        return [str(i) for (i,) in rows]

    def titles(self, left_out: Collection[str]) -> StatedTitles:
        rows = self._db.execute(_STATED.format(w=self._w), [list(left_out), TITLE_FROM]).fetchall()
        out = StatedTitles()
        for position, n, arxiv_id, title, source, strong, rank, best in rows:
            pair = TitledId(id=arxiv_id, title=title, source=source, strong=strong, rank=rank)
            (out.best if best else out.pairs).offer(pair, int(position), int(n))
        return out

    def own_baselines(self) -> list[str]:
        """Paths of this axis's own baseline notes dated in the window (their texts carry D numbers), the pinned
        `baseline` of the day before left out."""
        # Their ids filter the scan of source_rows itself: without them, every summary was read (~15 ms at 10k).
        vids = [
            v for (v,) in self._db.execute(f"SELECT vid FROM {self._w} WHERE kind = 'baseline'").fetchall()
        ]
        if not vids:
            return []
        rows = self._db.execute(
            f"SELECT w.path FROM (SELECT * FROM {self._w} WHERE kind = 'baseline') w JOIN source_rows r "
            "ON r.vid = w.vid WHERE r.vid = ANY($2::BIGINT[]) AND r.summary_json->>'$.baseline_axis' = $1 "
            "ORDER BY w.pos",
            [self._axis, vids],
        ).fetchall()
        before = self._baseline[0] if self._baseline else None
        return [str(p) for (p,) in rows if p != before]
