from rest_framework import permissions


class IsOwnerOrReadOnlyShared(permissions.BasePermission):
    """Rows are changed by their owner (or staff); built-in rows without an owner are read-only."""

    def has_object_permission(self, request, view, obj) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        if getattr(obj, "builtin", False):
            return False
        return request.user.is_staff or obj.owner_id == request.user.pk
