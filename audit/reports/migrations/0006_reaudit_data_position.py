from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0005_reportjob_data_position"),
    ]

    operations = [
        migrations.AddField(
            model_name="reauditrun",
            name="data_position",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="reauditchunk",
            name="data_position",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
