from django.contrib import admin

from webapp.accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "key_prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "key_prefix"]
    readonly_fields = ["key_prefix", "key_hash", "created_at", "last_used_at"]
