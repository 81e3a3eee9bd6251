from rest_framework import permissions


def may_change(user, row) -> bool:
    """Whether `user` may edit or delete `row`: their own rows, any as staff; built-in rows never.

    The one rule for datasets and reward configs: the services enforce it, the API's permission
    class and the pages' delete buttons ask it."""
    if getattr(row, "builtin", False):
        return False
    return user.is_staff or row.owner_id == user.pk


class IsOwnerOrReadOnlyShared(permissions.BasePermission):
    """Rows are changed by their owner (or staff); built-in rows without an owner are read-only."""

    def has_object_permission(self, request, view, obj) -> bool:
        return request.method in permissions.SAFE_METHODS or may_change(request.user, obj)
