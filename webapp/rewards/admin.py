from django.contrib import admin

from webapp.rewards.models import RewardConfig


@admin.register(RewardConfig)
class RewardConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "reward", "owner", "builtin", "updated_at"]
    list_filter = ["reward", "builtin"]
    search_fields = ["name", "description"]
