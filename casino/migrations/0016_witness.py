"""The trail as a Merkle log and its witnesses (issue 37, casino/merkle.py,
casino/witness.py): four append-only tables, guarded from here on; and
casino_chain_head refuses the chain (SQLSTATE CW409) while a fork or a
rollback named by the witnesses is not declared (casino.WitnessEvent): one
look-up in a tiny table inside the statement every writer already runs, so
the coup's path pays no round trip for it."""

import django.db.models.deletion
from django.db import migrations, models

TABLES = ["casino_treenode", "casino_checkpoint", "casino_cosignature",
          "casino_witnessevent"]

FUNCTION = """
CREATE OR REPLACE FUNCTION casino_chain_head(lock_key bigint) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    stop text;
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    SELECT e.detail INTO stop FROM casino_witnessevent e
     WHERE e.kind IN ('fork', 'behind')
       AND e.id > COALESCE((SELECT max(x.id) FROM casino_witnessevent x
                            WHERE x.kind = 'epoch'), 0)
     ORDER BY e.id LIMIT 1;
    IF stop IS NOT NULL THEN
        RAISE EXCEPTION 'the trail is stopped: %', stop USING ERRCODE = 'CW409';
    END IF;
    RETURN (SELECT hash || link FROM casino_changelog ORDER BY id DESC LIMIT 1);
END;
$$;
"""

FUNCTION_BEFORE = """
CREATE OR REPLACE FUNCTION casino_chain_head(lock_key bigint) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    RETURN (SELECT hash || link FROM casino_changelog ORDER BY id DESC LIMIT 1);
END;
$$;
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from casino.dbroles import guards_install

    guards_install(schema_editor.connection, TABLES)
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(FUNCTION)  # no parameters: its % is PL/pgSQL's


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FUNCTION_BEFORE)


class Migration(migrations.Migration):

    dependencies = [
        ('casino', '0015_anchor_checked'),
    ]

    operations = [
        migrations.CreateModel(
            name='Checkpoint',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('epoch', models.PositiveIntegerField(default=1)),
                ('size', models.BigIntegerField()),
                ('root', models.CharField(max_length=64)),
                ('head_row', models.BigIntegerField(blank=True, null=True)),
                ('at', models.DateTimeField()),
                ('note', models.TextField()),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.CreateModel(
            name='WitnessEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(max_length=16)),
                ('witness', models.CharField(blank=True, max_length=200)),
                ('size', models.BigIntegerField(blank=True, null=True)),
                ('detail', models.TextField()),
                ('request', models.TextField(blank=True)),
                ('epoch', models.PositiveIntegerField(blank=True, null=True)),
                ('row', models.BigIntegerField(blank=True, null=True)),
                ('at', models.DateTimeField()),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.CreateModel(
            name='Cosignature',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('witness', models.CharField(max_length=200)),
                ('line', models.TextField()),
                ('time', models.DateTimeField()),
                ('checkpoint', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='cosignatures', to='casino.checkpoint')),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.CreateModel(
            name='TreeNode',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('epoch', models.PositiveIntegerField(default=1)),
                ('level', models.SmallIntegerField()),
                ('index', models.BigIntegerField()),
                ('hash', models.CharField(max_length=64)),
                ('row', models.BigIntegerField(blank=True, null=True)),
            ],
            options={
                'indexes': [models.Index(fields=['row'], name='treenode_row')],
                'constraints': [models.UniqueConstraint(fields=('epoch', 'level', 'index'), name='treenode_position')],
            },
        ),
        migrations.RunPython(forward, backward),
    ]
