"""The reason code an operator sees for a briefing that cannot be written."""

from __future__ import annotations

import errno

import pytest

from streams.outbox import failure_reason


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), "no_space"),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), "no_space"),
        (PermissionError(errno.EACCES, "Permission denied"), "permission"),
        (OSError(errno.EROFS, "Read-only file system"), "read_only"),
        (FileExistsError(errno.EEXIST, "File exists"), "not_a_folder"),
        (NotADirectoryError(errno.ENOTDIR, "Not a directory"), "not_a_folder"),
        (OSError(errno.EIO, "Input/output error"), "os_error"),
        (ValueError("a rendering bug"), "error"),
    ],
)
def test_each_failure_has_the_reason_the_metric_and_status_show(error: BaseException, reason: str) -> None:
    assert failure_reason(error) == reason
