import os

# Tests talk to the real PostgreSQL and Redis that CI (and `make test`) provide.
os.environ.setdefault("CHANNELS_PREFIX", f"tirlab-test-{os.getpid()}")
