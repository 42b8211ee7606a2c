"""A stored note whose body reads back as UTF-8 JSON of the wrong shape is reported like any damaged one."""

from __future__ import annotations

from processors.wire import store_document
from processors.wire_frames import pack_body
from sinks.unreadable import Unreadable, whole_documents
from tests.state_support import parsed


def test_a_body_of_the_wrong_shape_is_reported_and_the_others_read() -> None:
    good = store_document(parsed("inbox/jay/a.md", "# KV cache\nvLLM paged attention\n"))
    summary, frame = good.summary_json, good.body_frame()
    assert isinstance(summary, str)
    unreadable = Unreadable()
    rows = [
        ("inbox/jay/a.md", "inference", summary, frame),
        ("inbox/jay/b.md", "inference", summary, pack_body(b'{"txt":"x","sections":[]}')),
    ]
    [doc] = whole_documents(rows, unreadable)
    assert doc.path == "inbox/jay/a.md"
    [listed] = unreadable.notes
    assert (listed.path, listed.reason_code) == ("inbox/jay/b.md", "damaged")
