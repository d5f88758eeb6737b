from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0004_reaudit_tables"),
    ]

    operations = [
        migrations.AddField(
            model_name="reportjob",
            name="data_position",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
