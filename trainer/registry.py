"""Things registered by name where they are defined, verl style (`@register_adv_est("grpo")`).

Each reward, protocol, environment and preset names itself in its own module of its package
(trainer.rewards, trainer.protocols, trainer.envs, trainer.presets); the package's registry imports
every module of the package the first time it is asked for a name, so adding one is adding one
file. The config's choices are read from the registries, never spelled again.

    REWARDS = Registry("reward", "trainer.rewards")
    REWARDS.register("torl", RegisteredReward(...))   # in trainer/rewards/torl.py
    REWARDS.get("torl"); REWARDS.names()
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(ValueError):
    """A name no module of the package registered; the message lists the ones that exist."""

    def __init__(self, kind: str, name: object, names: tuple[str, ...]) -> None:
        self.kind, self.name, self.choices = kind, name, names
        super().__init__(f"unknown {kind} {name!r}; choose one of: {', '.join(names)}")


class Registry(Generic[T]):
    """The `kind`s registered by the modules of `package`, by name.

    `order` is the sort key of a name and its item (default: the name), so that lists and menus do
    not depend on which module happened to be imported first."""

    def __init__(self, kind: str, package: str, *, order: Callable[[str, T], object] | None = None) -> None:
        self.kind, self.package, self._order = kind, package, order
        self._items: dict[str, T] = {}
        self._loaded = self._loading = False

    def register(self, name: str, item: T) -> T:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} needs a non-empty name, not {name!r}")
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        self._load()
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise UnknownName(self.kind, name, self.names()) from None

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def names(self) -> tuple[str, ...]:
        self._load()
        order = self._order
        if order is None:
            return tuple(sorted(self._items))
        return tuple(sorted(self._items, key=lambda name: order(name, self._items[name])))

    def items(self) -> Iterator[tuple[str, T]]:
        return ((name, self._items[name]) for name in self.names())

    def _load(self) -> None:
        """Import every module of the package once; each registers what it defines."""
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            package = importlib.import_module(self.package)
            for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
                importlib.import_module(f"{self.package}.{module.name}")
            self._loaded = True
        finally:
            self._loading = False
