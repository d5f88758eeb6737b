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
from django.db import DatabaseError
from django.db import connection as default_connection

# The tables whose rows the design updates (docs/operations.md, "The database roles").
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
    needs on this database (run as the tables' owner; idempotent).

    The owner need not be a superuser (`owner_missing` says what it needs);
    one that lacks something is refused before anything is changed."""
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
        missing = owner_missing(cursor, owner=owner, role=role, password=password)
        if missing:
            raise RoleError(
                f"db_roles runs as {owner}, which is not a superuser and "
                + "; and ".join(missing)
                + " (docs/operations.md, The database roles: what the owner needs)"
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
        wrong = _attributes_to_fix(cursor, role)
        if wrong:
            # only what is wrong: a CREATEROLE owner may not even name
            # SUPERUSER, REPLICATION or BYPASSRLS (owner_missing refused those)
            _alter_role(cursor, f"ALTER ROLE {q} {' '.join(wrong)}", [],
                        owner=owner, role=role)
        if password:
            _alter_role(cursor, f"ALTER ROLE {q} PASSWORD %s", [password],
                        owner=owner, role=role)
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
        _check_granted(cursor, role, database)
    guards_install(connection)
    return plan


# Attributes the runtime role must not have, and what removes each.
_ATTRIBUTES = (
    ("rolsuper", "NOSUPERUSER"), ("rolcreatedb", "NOCREATEDB"),
    ("rolcreaterole", "NOCREATEROLE"), ("rolreplication", "NOREPLICATION"),
    ("rolbypassrls", "NOBYPASSRLS"),
)
_SUPERUSER_ONLY = {"NOSUPERUSER", "NOREPLICATION", "NOBYPASSRLS"}


def _attributes_to_fix(cursor, role: str) -> list[str]:
    """The ALTER ROLE clauses the runtime role needs: LOGIN, and the removal
    of every attribute it must not have. Empty when it is right (or absent)."""
    cursor.execute(
        "SELECT rolcanlogin, " + ", ".join(a for a, _ in _ATTRIBUTES)
        + " FROM pg_roles WHERE rolname = %s", [role])
    row = cursor.fetchone()
    if row is None:
        return []
    wrong = [] if row[0] else ["LOGIN"]
    return wrong + [fix for (_, fix), has in zip(_ATTRIBUTES, row[1:], strict=True)
                    if has]


def owner_missing(cursor, *, owner: str, role: str, password: str | None
                  ) -> list[str]:
    """What a non-superuser owner lacks to run db_roles, each said with the
    statement that gives it (empty for a superuser, or when nothing lacks):

    - CREATEROLE, to create the runtime role, set its password or take an
      attribute away (not needed when the role exists as it should and no
      password is given);
    - the role itself must not be SUPERUSER, REPLICATION or BYPASSRLS: only a
      superuser takes those away;
    - ownership of the database (GRANT CONNECT on it, REVOKE CREATE on it and
      on its public schema, which PostgreSQL 15 gives to the database's
      owner): a GRANT or REVOKE by anyone else only warns, and would leave
      the runtime role able to create objects;
    - ownership of every table, sequence and guard function of the schema
      (migrate, run as this owner, made them so): grants and triggers are
      their owner's.
    """
    cursor.execute("SELECT rolsuper, rolcreaterole FROM pg_roles "
                   "WHERE rolname = current_user")
    superuser, createrole = cursor.fetchone()
    if superuser:
        return []
    missing = []
    wrong = _attributes_to_fix(cursor, role)
    cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
    exists = cursor.fetchone() is not None
    beyond = sorted(set(wrong) & _SUPERUSER_ONLY)
    if beyond:
        missing.append(
            f"{role} has {', '.join(b.removeprefix('NO') for b in beyond)}, "
            f"which only a superuser takes away: as a superuser, ALTER ROLE "
            f"{role} {' '.join(beyond)}")
    elif not createrole and (not exists or wrong or password):
        missing.append(
            f"lacks CREATEROLE, needed to {_role_work(exists, wrong, password)} "
            f"the runtime role {role}: as a superuser, ALTER ROLE {owner} "
            f"CREATEROLE (or CREATE ROLE {role} LOGIN yourself and run db_roles "
            "without APP_DB_PASSWORD)")
    cursor.execute(
        "SELECT d.datname, pg_get_userbyid(d.datdba), "
        "pg_has_role(d.datdba, 'MEMBER'), pg_get_userbyid(n.nspowner), "
        "pg_has_role(n.nspowner, 'MEMBER') FROM pg_database d, pg_namespace n "
        "WHERE d.datname = current_database() AND n.nspname = 'public'")
    database, db_owner, owns_db, schema_owner, owns_schema = cursor.fetchone()
    if not owns_db:
        missing.append(
            f"does not own the database {database} (its owner is {db_owner}), "
            "needed to grant CONNECT on it and revoke CREATE: as a superuser, "
            f"ALTER DATABASE {database} OWNER TO {owner}")
    elif not owns_schema:
        missing.append(
            f"does not own the schema public (its owner is {schema_owner}), "
            "needed to revoke CREATE on it: as a superuser, ALTER SCHEMA public "
            f"OWNER TO {owner}")
    cursor.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
        "AND c.relkind IN ('r', 'p', 'S') AND NOT pg_has_role(c.relowner, 'MEMBER') "
        "UNION ALL SELECT p.proname FROM pg_proc p JOIN pg_namespace n "
        "ON n.oid = p.pronamespace WHERE n.nspname = 'public' "
        "AND p.proname = 'casino_refuse_change' "
        "AND NOT pg_has_role(p.proowner, 'MEMBER') ORDER BY 1")
    foreign = [r[0] for r in cursor.fetchall()]
    if foreign:
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        missing.append(
            f"does not own {', '.join(foreign[:5])}{more}, whose grants and "
            f"triggers are their owner's: run migrate as {owner}, or as a "
            f"superuser REASSIGN OWNED BY ... TO {owner}")
    return missing


def _role_work(exists: bool, wrong: list[str], password: str | None) -> str:
    if not exists:
        return "create"
    work = []
    if "LOGIN" in wrong:
        work.append("let log in")
    taken = [w.removeprefix("NO") for w in wrong if w != "LOGIN"]
    if taken:
        work.append(f"take {', '.join(taken)} away from")
    if password:
        work.append("set the password of")
    return " and ".join(work)


def _alter_role(cursor, sql: str, params: list, *, owner: str, role: str) -> None:
    try:
        cursor.execute(sql, params or None)
    except DatabaseError as exc:
        raise RoleError(
            f"{owner} may not alter the runtime role {role} ({exc}): on PostgreSQL "
            f"16 and later a CREATEROLE owner needs ADMIN OPTION on a role it did "
            f"not create (as a superuser, GRANT {role} TO {owner} WITH ADMIN "
            "OPTION)"
        ) from exc


def _check_granted(cursor, role: str, database: str) -> None:
    """What a GRANT or REVOKE that only warned would leave: the runtime role
    able to create objects, or unable to connect."""
    cursor.execute(
        "SELECT has_database_privilege(%s, current_database(), 'CREATE'), "
        "has_schema_privilege(%s, 'public', 'CREATE'), "
        "has_database_privilege(%s, current_database(), 'CONNECT'), "
        "has_schema_privilege(%s, 'public', 'USAGE')", [role] * 4)
    create_db, create_schema, connect, usage = cursor.fetchone()
    if create_db or create_schema or not connect or not usage:
        raise RoleError(
            f"{role} still has CREATE on database {database} or schema public, or "
            "lacks CONNECT or USAGE, after db_roles' grants: run it as the "
            "database's owner"
        )


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
