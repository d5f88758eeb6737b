"""Admin: the PIN lockout's counts, read-only; deleting one unlocks that user
name on that device at once (logged, as every write)."""

from __future__ import annotations

from django.contrib import admin
from django.db import transaction

from casino.changelog import log_action

from .models import PinAttempts


def _state(row: PinAttempts) -> dict:
    return {
        "username": row.username,
        "address": row.address,
        "attempts": row.attempts,
        "locked_at": row.locked_at.isoformat() if row.locked_at else None,
    }


@admin.register(PinAttempts)
class PinAttemptsAdmin(admin.ModelAdmin):
    list_display = ("username", "address", "attempts", "last_at", "locked_at")
    search_fields = ("username", "address")
    ordering = ("-last_at",)

    def has_add_permission(self, request):
        return False  # counted by the unlock screen only

    def has_change_permission(self, request, obj=None):
        return False

    def delete_model(self, request, obj):
        with transaction.atomic():
            log_action(action="tablet.pin.reset", user=request.user,
                       device="admin", old=_state(obj))
            super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for row in queryset:
                log_action(action="tablet.pin.reset", user=request.user,
                           device="admin", old=_state(row))
            super().delete_queryset(request, queryset)
