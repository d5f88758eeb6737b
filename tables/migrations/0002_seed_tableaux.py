"""The two tableaux every installation starts with, written as literal data so
that this migration means the same thing forever (docs/rules.md, "The banker's tableau")."""

from django.db import migrations

D, S, O = "D", "S", "O"
# columns: punter stood, then punter's third card worth 0..9
CHEMMY = {
    "0": [D] * 11, "1": [D] * 11, "2": [D] * 11,
    "3": [D, D, D, D, D, D, D, D, D, S, O],
    "4": [D, S, S, D, D, D, D, D, D, S, S],
    "5": [D, S, S, S, S, O, D, D, D, S, S],
    "6": [S, S, S, S, S, S, S, D, D, S, S],
    "7": [S] * 11,
}
PUNTO_BANCO = {
    "0": [D] * 11, "1": [D] * 11, "2": [D] * 11,
    "3": [D, D, D, D, D, D, D, D, D, S, D],
    "4": [D, S, S, D, D, D, D, D, D, S, S],
    "5": [D, S, S, S, S, D, D, D, D, S, S],
    "6": [S, S, S, S, S, S, S, D, D, S, S],
    "7": [S] * 11,
}


def seed(apps, schema_editor):
    TableauVersion = apps.get_model("tables", "TableauVersion")
    TableauVersion.objects.create(
        version="chemmy-standard-1", rows=CHEMMY,
        description="Standard chemin de fer tableau (docs/rules.md)",
    )
    TableauVersion.objects.create(
        version="punto-banco-1", rows=PUNTO_BANCO,
        description="Punto banco banker rule (for the exact-odds check)",
    )


class Migration(migrations.Migration):
    dependencies = [("tables", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
