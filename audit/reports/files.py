"""Where a report job's file lives, and the check before it is served.

The path is derived, never read: MEDIA_ROOT/reports/<kind>-<from>-<to>-<id>.<format>,
from the job's id, its kind and format (each one of its set) and its period
(two ISO days), the name the build writes (services.report_build). The
stored `file` column is a note for people; whoever can UPDATE the row (the
runtime role) cannot point a download at /etc/passwd, a key file or `../`.

A file is served only when the job row is the one the trail sealed (its
SHA-256 column is bound with the job's finishing write: casino/trail.py) and
the bytes on disk have that digest. Otherwise the download is refused (409,
RecordChanged naming the job) and a critical flag is raised (the integrity
alarm, casino/continuity.py): a file replaced on disk or gone, a symlink at the
derived path, a row edited by hand. Evidence bundles are report jobs too.
"""

from __future__ import annotations

import hashlib
import os
import stat
from datetime import date
from pathlib import Path
from typing import BinaryIO

from django.conf import settings

from casino.continuity import alarm, trusted
from casino.errors import NotFound, RecordChanged

from .models import ReportJob, Status

LABEL = "reports.reportjob"


def job_name(job: ReportJob) -> str:
    """The file's name, from the job's own fields checked against their sets:
    nothing in it can climb out of the folder (ValueError otherwise)."""
    if job.kind not in ReportJob.Kind.values:
        raise ValueError(f"kind {job.kind!r}")
    if job.format not in ReportJob.Format.values:
        raise ValueError(f"format {job.format!r}")
    p = job.params if isinstance(job.params, dict) else {}
    days = [date.fromisoformat(str(p.get(k))).isoformat()
            for k in ("from_day", "to_day")]
    return f"{job.kind}-{days[0]}-{days[1]}-{int(job.pk)}.{job.format}"


def reports_folder() -> Path:
    return Path(settings.MEDIA_ROOT) / "reports"


def job_path(job: ReportJob) -> Path:
    return reports_folder() / job_name(job)


def _refuse(job: ReportJob, problem: str, *, found: str,
            user=None, device: str = "") -> RecordChanged:
    """The alarm (a critical flag, once per job and what was found), and the
    409 to answer with."""
    exc = RecordChanged(LABEL, str(job.pk), problem, found=found,
                        sealed=job.sha256 or None)
    alarm(exc, user=user, device=device)
    return exc


def job_file_open(job: ReportJob, *, user=None, device: str = "") -> BinaryIO:
    """The job's file, open, checked: raises NotFound (no file yet, or gone)
    or RecordChanged (the row or the file is not what the trail sealed, or
    the file is gone; the alarm is raised)."""
    if job.status != Status.DONE:
        raise NotFound("report", "this report has no file (yet)")
    trusted(job, user=user, device=device)  # the row, sha256 included, as sealed
    try:
        path = job_path(job)
    except ValueError as exc:  # cannot happen to a sealed row; say it if it does
        raise _refuse(job, f"its file cannot be named ({exc})", found="name",
                      user=user, device=device) from None
    # The folder as the app made it (MEDIA_ROOT itself may be a link): a
    # link at the file's place, or the folder swapped for one, is refused.
    folder = Path(settings.MEDIA_ROOT).resolve() / "reports"
    if path.is_symlink() or path.resolve().parent != folder:
        raise _refuse(job, "its file is a link", found="link", user=user,
                      device=device)
    try:  # O_NOFOLLOW: a link put there since the check is not followed
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:  # a done job's file does not go by itself
        raise _refuse(job, "its file is missing", found="missing", user=user,
                      device=device) from None
    except OSError:
        raise _refuse(job, "its file is a link", found="link", user=user,
                      device=device) from None
    f = os.fdopen(fd, "rb")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _refuse(job, "its file is not a file", found="not a file",
                          user=user, device=device)
        digest = hashlib.sha256()
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
        if digest.hexdigest() != job.sha256:
            raise _refuse(job, "its file differs from the digest the trail sealed",
                          found=digest.hexdigest(), user=user, device=device)
        f.seek(0)  # the same open file is served: a swap after the check is moot
    except BaseException:
        f.close()
        raise
    return f
