"""The run page's websocket in a browser test, served by tirlab's own consumer.

pytest-django's live server speaks HTTP only, so a page under test has no websocket and polls. A
page watched through its socket (as under `make run`) is what `RunSocket` gives: Playwright routes
the page's `/ws/runs/<id>/` to the test, and the test forwards to it what the real RunConsumer sends
— through the ASGI application, the Redis channel layer and the events the ingest and the run's
transitions publish — to a websocket client logged in with the page's own session.

    socket = RunSocket(page, live_server, run_id)   # before the page opens
    open the page; socket.connect()                  # the consumer's snapshot reaches the page
    ... write through the ingest ...
    socket.forward_until("status")                  # what the consumer pushed, up to that event
"""

import asyncio
import json
import queue
import re
import threading
import time
from urllib.parse import urlsplit


class RunSocket:
    def __init__(self, page, live_server, run_id: int):
        self.page, self.run_id = page, run_id
        self.origin = live_server.url
        self.route = None
        self.received: queue.Queue = queue.Queue()
        self.sent: list[dict] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Taken as the page opens it: the page's socket is open (and not polling) from then on.
        page.route_web_socket(re.compile(rf"/ws/runs/{run_id}/$"), self._take)

    def _take(self, route) -> None:
        self.route = route

    def connect(self, timeout_s: float = 10) -> dict:
        """Connect to the consumer as the page's user; forward its snapshot to the page."""
        deadline = time.monotonic() + timeout_s
        while self.route is None:
            assert time.monotonic() < deadline, "the page did not open its run socket"
            self.page.wait_for_timeout(50)
        session = next(c["value"] for c in self.page.context.cookies() if c["name"] == "sessionid")
        host = urlsplit(self.origin).hostname
        ready = threading.Event()
        self._thread = threading.Thread(target=self._listen, args=(session, host, ready), daemon=True)
        self._thread.start()
        assert ready.wait(timeout_s), "the run socket did not connect"
        return self.forward_until("snapshot")

    def _listen(self, session: str, host: str, ready: threading.Event) -> None:
        from channels.db import database_sync_to_async
        from channels.testing import WebsocketCommunicator
        from django.db import connections

        from webapp.asgi import application

        async def listen() -> None:
            headers = [(b"cookie", f"sessionid={session}".encode()), (b"origin", f"http://{host}".encode())]
            communicator = WebsocketCommunicator(application, f"/ws/runs/{self.run_id}/", headers=headers)
            connected, _ = await communicator.connect(timeout=10)
            assert connected
            ready.set()
            try:
                while not self._stop.is_set():
                    # Not receive_json_from's timeout to wait: running out, it cancels the consumer.
                    if not await communicator.receive_nothing(timeout=0.2):
                        self.received.put(await communicator.receive_json_from(timeout=5))
            finally:
                await communicator.disconnect()
                # The consumer's queries ran in asgiref's thread, whose connection must go back.
                await database_sync_to_async(connections.close_all)()

        asyncio.run(listen())

    def forward_until(self, event: str, timeout_s: float = 10) -> dict:
        """Forward what the consumer sent to the page, in order, up to and with the first `event`."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                message = self.received.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {event!r} event from the run socket; forwarded: {self.sent}") from None
            self.route.send(json.dumps(message))
            self.sent.append(message)
            if message["event"] == event:
                return message

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
