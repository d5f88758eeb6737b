"""Two indexes on tables_coup that others already cover: shoe_id leads the
unique (shoe_id, seq, revision) and gaming_day leads (gaming_day, shoe_id).
Each was one more B-tree insert per coup.

Only the indexes are dropped: Django's AlterField on the foreign key would
drop and re-add its constraint, which re-checks every coup under a lock.
"""

import django.db.models.deletion
from django.db import migrations, models

DROPPED = {
    "tables_coup_shoe_id_adce88c4": "shoe_id",
    "tables_coup_gaming_day_4ca92200": "gaming_day",
}


class Migration(migrations.Migration):
    dependencies = [
        ("tables", "0004_review_and_corrections"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="coup",
                    name="gaming_day",
                    field=models.DateField(),
                ),
                migrations.AlterField(
                    model_name="coup",
                    name="shoe",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="coups",
                        to="tables.shoe",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{name}"',
                    f'CREATE INDEX "{name}" ON "tables_coup" ("{column}")',
                )
                for name, column in DROPPED.items()
            ],
        ),
    ]
