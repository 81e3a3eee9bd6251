import json

from django import template

register = template.Library()


@register.filter
def as_json(value) -> str:
    """JSON as researchers write it in configs (true, not True); autoescaped like any text."""
    return json.dumps(value, sort_keys=True)
