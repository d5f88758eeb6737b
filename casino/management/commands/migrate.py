"""Django's migrate, as the tables' owner when MIGRATE_DATABASE_URL is set
(casino/dbowner.py): the runtime role has no DDL."""

from django.core.management.commands.migrate import Command as MigrateCommand

from casino.dbowner import owner_database


class Command(MigrateCommand):
    def handle(self, *args, **options):
        with owner_database():
            return super().handle(*args, **options)
