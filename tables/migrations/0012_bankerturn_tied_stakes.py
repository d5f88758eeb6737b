from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tables', '0011_rollup_grains'),
    ]

    operations = [
        migrations.AddField(
            model_name='bankerturn',
            name='tied_stakes',
            field=models.JSONField(blank=True, default=None, null=True),
        ),
    ]
