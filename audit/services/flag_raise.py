"""A finding's flag starts in its coup's own transaction.

Registered with tables.services.hooks at start-up (audit.apps): every new
coup's findings get their review flags — and the flags' "raised" step, at the
coup's recorded time — in the transaction that records the coup, on both of
its write paths (the ORM's, and PostgreSQL's batch, where the flags are two
more statements of the same round trip). The flag is then in the queue the
moment the coup is, and its history says when the coup was recorded, not when
somebody first opened the floor.

`flags.flags_sync` stays: it moves and resolves flags after corrections, and
raises the flags of findings recorded before this existed (or written by a
path that bypasses the hook), once, at the coup's time too.

A flag row and a "raised" event are not ledger rows the trail binds
(casino.trail.BOUND_ONLY: only decisions are), so the coup's log row is
unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection

from tables.models import Coup, Finding

from ..models import Flag, FlagEvent


def finding_key(code: str, side: str, detail: dict) -> str:
    """What a finding is about inside its coup, stable across revisions."""
    card = detail.get("card", "") if code == "card_count_exceeded" else ""
    return f"{code}:{side or '-'}:{card}"


def flag_ident(coup: Coup, finding: Finding) -> str:
    key = finding_key(finding.code, finding.side, finding.detail)
    return f"f:{coup.shoe_id}:{coup.seq}:{key}"


def raised_detail(coup: Coup) -> dict:
    return {"revision": coup.revision, "raised_by_revision": coup.revision}


def _pairs(coup: Coup, findings: Sequence[Finding]) -> list[tuple[Finding, Flag]]:
    """(finding, its new flag), one flag per finding key: a second finding on
    the same key (never in one coup today) is left to flags_sync."""
    session = coup.shoe.session
    out, seen = [], set()
    for f in findings:
        ident = flag_ident(coup, f)
        if ident in seen:
            continue
        seen.add(ident)
        out.append((f, Flag(
            ident=ident, kind=Flag.Kind.FINDING, code=f.code, severity=f.severity,
            side=f.side or "", message=f.message[:400],
            table_id=session.table_id, session_id=session.pk,
            gaming_day=coup.gaming_day, shoe_id=coup.shoe_id, seq=coup.seq,
            coup_id=coup.pk, finding_id=f.pk, croupier_id=coup.entered_by_id,
            author_id=coup.corrected_by_id or coup.entered_by_id,
            raised_at=coup.corrected_at or coup.created_at,
        )))
    return out


def _event(flag: Flag, coup: Coup) -> FlagEvent:
    return FlagEvent(flag=flag, at=flag.raised_at, user_id=coup.corrected_by_id,
                     action="raised", coup_id=coup.pk, detail=raised_detail(coup))


class FindingFlags:
    """tables.services.hooks.FindingsWriter for review flags."""

    def written(self, coups: Sequence[tuple[Coup, Sequence[Finding]]]) -> None:
        made = [(coup, flag) for coup, found in coups
                for _, flag in _pairs(coup, found)]
        Flag.objects.bulk_create([flag for _, flag in made])
        if made and made[0][1].pk is None:  # a database that returns no ids
            ids = dict(Flag.objects.filter(ident__in=[f.ident for _, f in made])
                       .values_list("ident", "pk"))
            for _, flag in made:
                flag.pk = ids[flag.ident]
        FlagEvent.objects.bulk_create([_event(flag, coup) for coup, flag in made])

    def statements(self, coup: Coup, findings: Sequence[Finding]) -> list:
        """Two INSERTs: the flags, each naming its finding by its place among
        the coup's findings just inserted (ids are given in insertion order);
        then their "raised" steps, each naming its flag by its unique ident."""
        made = _pairs(coup, findings)
        place = {id(f): n for n, f in enumerate(findings)}
        finding_sql = (f'(SELECT id FROM "{Finding._meta.db_table}" '
                       "WHERE coup_id = %s ORDER BY id OFFSET %s LIMIT 1)")
        flag_rows = [(flag, {"finding_id": (finding_sql, [coup.pk, place[id(f)]])})
                     for f, flag in made]
        flag_sql = f'(SELECT id FROM "{Flag._meta.db_table}" WHERE ident = %s)'
        event_rows = [(_event(flag, coup), {"flag_id": (flag_sql, [flag.ident])})
                      for _, flag in made]
        return [_insert(Flag, flag_rows), _insert(FlagEvent, event_rows)]


def _insert(model, rows: list[tuple[object, dict]]) -> tuple[str, list]:
    """INSERT of unsaved instances, each value prepared as the ORM would;
    `rows`' dicts give a column's value as a subquery (sql, params)."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    groups, params = [], []
    for obj, subqueries in rows:
        marks = []
        for f in fields:
            if f.attname in subqueries:
                sql, sub = subqueries[f.attname]
                marks.append(sql)
                params += sub
            else:
                marks.append("%s")
                params.append(f.get_db_prep_save(f.pre_save(obj, True), connection))
        groups.append("(" + ", ".join(marks) + ")")
    columns = ", ".join(f'"{f.column}"' for f in fields)
    return (f'INSERT INTO "{model._meta.db_table}" ({columns}) VALUES '
            + ", ".join(groups), params)


FINDING_FLAGS = FindingFlags()


class ShoeFindingFlags:
    """tables.services.hooks.ShoeFindingsWriter: a shoe's own finding
    (shoe_count at its close) enters the queue as a flag of kind "shoe", in
    the close's transaction. Whoever closed the shoe raised it, and the
    session's croupier is the one concerned: neither may decide on it."""

    def shoe_written(self, shoe, findings: Sequence, *, user) -> None:
        session = shoe.session
        for f in findings:
            flag = Flag.objects.create(
                ident=f"h:{shoe.pk}:{f.code}", kind=Flag.Kind.SHOE, code=f.code,
                severity=f.severity, message=f.message[:400],
                table_id=session.table_id, session_id=session.pk,
                gaming_day=session.gaming_day, shoe_id=shoe.pk,
                croupier_id=session.croupier_id,
                author_id=getattr(user, "pk", None), raised_at=f.created_at,
            )
            FlagEvent.objects.create(
                flag=flag, at=f.created_at, user_id=getattr(user, "pk", None),
                action="raised", detail=dict(f.detail))


SHOE_FLAGS = ShoeFindingFlags()
