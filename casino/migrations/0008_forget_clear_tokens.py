"""DRF's authtoken kept API tokens in clear (`authtoken_token`). The app no
longer installs nor reads it (casino.ApiToken holds digests only), and
Django leaves the table and its migration rows behind when an app goes:
empty it, so that whoever reads the database finds no token in clear, and
its key to auth_user does not block removing a user. The table stays."""

from django.db import migrations


def forget_clear_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if "authtoken_token" in connection.introspection.table_names():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM authtoken_token")


class Migration(migrations.Migration):

    dependencies = [
        ("casino", "0007_api_tokens_hashed"),
    ]

    operations = [
        migrations.RunPython(forget_clear_tokens, migrations.RunPython.noop),
    ]
