"""Websockets: /ws/runs/ (run-list changes) and /ws/runs/<id>/ (one run's live data)."""

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from webapp.runs.events import STAFF_LIST_GROUP, owner_list_group, run_group, run_list_item, run_timings
from webapp.runs.models import Run


class RunListConsumer(AsyncJsonWebsocketConsumer):
    """Created runs, status changes and summary metrics of the runs the user may see."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.user_id, self.is_staff = user.pk, user.is_staff
        self.group = STAFF_LIST_GROUP if user.is_staff else owner_list_group(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def runs_event(self, message: dict[str, Any]) -> None:
        await self.send_json({"event": message["event"], "run": message["run"]})


class RunConsumer(AsyncJsonWebsocketConsumer):
    """Metric steps, trajectory summaries, status changes, the trainer's phase and log lines of one run."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        run = await self._visible_run(user)
        if run is None:
            await self.close(code=4404)
            return
        self.group = run_group(self.run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        # The run as it is now, its timings with it: what changed while the page had no socket.
        snapshot = {**run_list_item(run), **run_timings(run)}
        await self.send_json({"event": "snapshot", "run_id": self.run_id, "data": snapshot})

    @database_sync_to_async
    def _visible_run(self, user) -> Run | None:
        return Run.objects.visible_to(user).filter(pk=self.run_id).first()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def run_event(self, message: dict[str, Any]) -> None:
        if message["run_id"] != self.run_id:
            return
        await self.send_json({"event": message["event"], "run_id": message["run_id"], "data": message["data"]})
