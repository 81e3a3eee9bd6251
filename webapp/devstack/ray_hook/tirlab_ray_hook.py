"""Called by `ray start` for the embedded head (Ray's RAY_START_HOOK), with its parameters, before it starts anything.

tirlab reaches Ray through the job API only, never through Ray Client. `ray start` starts a Ray Client
server whenever grpc is installed, and on a port it cannot choose itself (0 is refused): the fixed 10001,
which every other head and any other program on the machine may want too, or one picked for it here,
which something else may take before Ray binds it. Without the server there is no such port.
"""

from typing import Any


def without_client_server(ray_params: Any, head: bool) -> None:  # ray._private.parameter.RayParams
    ray_params.ray_client_server_port = None
