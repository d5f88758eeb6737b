"""Least privilege in PostgreSQL: the owner runs migrations, the app runs as a
role that owns nothing.

Why a separate role: a table's owner can always TRUNCATE it, disable its
triggers (`ALTER TABLE … DISABLE TRIGGER USER`), replace the trigger's
function or drop the table. Triggers alone therefore guard the records
against the app's code, not against whoever holds the app's credentials. The
runtime role gets exactly the privileges the app's statements need:

- append-only tables (every `AppendOnlyModel`: the change log, coups, stakes,
  findings, house rules, tableaux, cagnotte counts and attestations, flag
  history, re-audit findings): SELECT and INSERT only;
- the floor's running state, which the design updates (`UPDATE_TABLES`):
  SELECT, INSERT and UPDATE, never DELETE;
- framework tables (sign-in sessions, API tokens, the lockout's attempts,
  beat schedules, users and groups): SELECT, INSERT, UPDATE, DELETE — what
  Django, django-axes and django-celery-beat do with them;
- `django_migrations`: SELECT;
- sequences: USAGE and SELECT (ids are taken with nextval).
No TRUNCATE, no REFERENCES, no TRIGGER privilege anywhere; no CREATE on the
schema; not a member of the owner. As a second line, every append-only table
carries row triggers refusing UPDATE and DELETE and a statement trigger
refusing TRUNCATE (`guards_install`), which hold even for the owner.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.apps import apps
from django.db import connection as default_connection

# The tables whose rows the design updates (README, "Running in production").
# Everything else of the app's own is append-only or read-only to the app.
UPDATE_TABLES = (
    "tables_table",  # its house rules pointer (a new HouseRules row each time)
    "tables_tablesession",  # croupier, relief, close
    "tables_shoe",  # next coup number, cards dealt, close
    "tables_bankerturn",  # bank, coups, garage and commission totals, close
    "tables_dailyrollup",  # the reports' counters, at every grain
    "tables_tabledayrollup",
    "tables_croupiermonthrollup",
    "tables_seatmonthrollup",
    "audit_flag",  # status of a review item (its history is append-only)
    "reports_reportjob",  # progress of a report build
    "reports_reauditrun",  # progress of a re-audit
    "reports_reauditchunk",
    "audit_surveillancerun",  # progress of a surveillance run
)
READ_ONLY_TABLES = ("django_migrations",)
GUARD_FUNCTION = """
CREATE OR REPLACE FUNCTION casino_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'append-only table %: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""


def append_only_tables() -> list[str]:
    """Every table whose model is append-only, from the models themselves, so
    a new append-only model is guarded the day it is added."""
    from .models import AppendOnlyModel

    return sorted(
        m._meta.db_table
        for m in apps.get_models()
        if issubclass(m, AppendOnlyModel) and not m._meta.proxy
    )


def guards_install(connection=None, tables=None) -> list[str]:
    """Row triggers (UPDATE, DELETE) and a statement trigger (TRUNCATE) on each
    append-only table; idempotent. Returns the tables guarded."""
    connection = connection or default_connection
    tables = append_only_tables() if tables is None else list(tables)
    with connection.cursor() as cursor:
        cursor.execute(GUARD_FUNCTION)
        for table in tables:
            cursor.execute(
                f'CREATE OR REPLACE TRIGGER "{table}_append_only" '
                f'BEFORE UPDATE OR DELETE ON "{table}" '
                "FOR EACH ROW EXECUTE FUNCTION casino_refuse_change()"
            )
            cursor.execute(
                f'CREATE OR REPLACE TRIGGER "{table}_no_truncate" '
                f'BEFORE TRUNCATE ON "{table}" '
                "FOR EACH STATEMENT EXECUTE FUNCTION casino_refuse_change()"
            )
    return tables


def missing_guards(connection=None) -> list[str]:
    """Append-only tables lacking one of their triggers (or with one
    disabled): '<table>: <trigger>' for each."""
    connection = connection or default_connection
    wanted = {
        (t, f"{t}_{kind}") for t in append_only_tables()
        for kind in ("append_only", "no_truncate")
    }
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, t.tgname FROM pg_trigger t "
            "JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE NOT t.tgisinternal AND t.tgenabled IN ('O', 'A')"
        )
        present = set(cursor.fetchall())
    return sorted(f"{t}: {name}" for t, name in wanted - present)


@dataclass
class RolePlan:
    role: str
    created: bool = False
    tables: dict[str, str] = field(default_factory=dict)  # table -> privileges


class RoleError(Exception):
    pass


def _quote(connection, name: str) -> str:
    return connection.ops.quote_name(name)


def _privileges(table: str, append_only: set[str]) -> str:
    if table in append_only:
        return "SELECT, INSERT"
    if table in READ_ONLY_TABLES:
        return "SELECT"
    if table in UPDATE_TABLES:
        return "SELECT, INSERT, UPDATE"
    return "SELECT, INSERT, UPDATE, DELETE"


def app_role_grant(*, role: str, password: str | None, connection=None) -> RolePlan:
    """Create or update the runtime role and grant it exactly what the app
    needs on this database (run as the tables' owner; idempotent)."""
    connection = connection or default_connection
    if connection.vendor != "postgresql":
        raise RoleError("db_roles needs PostgreSQL (DATABASE_URL=postgres://...)")
    q = _quote(connection, role)
    plan = RolePlan(role=role)
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, current_database()")
        owner, database = cursor.fetchone()
        if owner == role:
            raise RoleError(
                f"the runtime role {role} cannot be the user running this command: "
                "run db_roles with the owner's DATABASE_URL"
            )
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        if cursor.fetchone() is None:
            try:
                cursor.execute(f"CREATE ROLE {q} LOGIN")
                plan.created = True
            except Exception:  # created meanwhile by another db_roles run
                cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
                if cursor.fetchone() is None:
                    raise
        cursor.execute(
            f"ALTER ROLE {q} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE "
            "NOREPLICATION NOBYPASSRLS"
        )
        if password:
            cursor.execute(f"ALTER ROLE {q} PASSWORD %s", [password])
        cursor.execute(
            "SELECT pg_has_role(%s, %s, 'MEMBER')", [role, owner]
        )
        if cursor.fetchone()[0]:
            raise RoleError(
                f"{role} is a member of {owner} and would hold its privileges: "
                f"REVOKE {owner} FROM {role}"
            )
        owned = _owned_by(cursor, role)
        if owned:
            raise RoleError(
                f"{role} owns {', '.join(owned[:5])}: an owner can truncate, disable "
                f"triggers and drop; REASSIGN OWNED BY {role} TO {owner} first"
            )
        dbq = _quote(connection, database)
        cursor.execute(f"GRANT CONNECT, TEMPORARY ON DATABASE {dbq} TO {q}")
        cursor.execute(f"REVOKE CREATE ON DATABASE {dbq} FROM {q}")
        cursor.execute(f"GRANT USAGE ON SCHEMA public TO {q}")
        cursor.execute(f"REVOKE CREATE ON SCHEMA public FROM {q}")
        cursor.execute("SELECT has_schema_privilege(%s, 'public', 'CREATE')", [role])
        if cursor.fetchone()[0]:
            # PUBLIC still has CREATE (databases made before PostgreSQL 15).
            cursor.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        cursor.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
            "ORDER BY tablename"
        )
        tables = [r[0] for r in cursor.fetchall()]
        append_only = set(append_only_tables())
        for table in tables:
            t = _quote(connection, table)
            privileges = _privileges(table, append_only)
            cursor.execute(f"REVOKE ALL ON {t} FROM {q}")
            cursor.execute(f"GRANT {privileges} ON {t} TO {q}")
            plan.tables[table] = privileges
        cursor.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {q}")
        cursor.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {q}")
    guards_install(connection)
    return plan


def _owned_by(cursor, role: str) -> list[str]:
    cursor.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
        "WHERE r.rolname = %s UNION ALL "
        "SELECT p.proname FROM pg_proc p JOIN pg_roles r ON r.oid = p.proowner "
        "WHERE r.rolname = %s UNION ALL "
        "SELECT n.nspname FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner "
        "WHERE r.rolname = %s",
        [role, role, role],
    )
    return [r[0] for r in cursor.fetchall()]
