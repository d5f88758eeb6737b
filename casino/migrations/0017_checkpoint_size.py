"""The evidence bundle finds the checkpoints of a window's leaves by tree size
(audit/evidence/witnessed.py): an index on (epoch, size), so a month's
checkpoints (one a second) are not scanned for each window."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('casino', '0016_witness'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(fields=['epoch', 'size'], name='checkpoint_size'),
        ),
    ]
