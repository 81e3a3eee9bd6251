import os

import pytest

# Tests talk to the real PostgreSQL and Redis that CI (and `make test`) provide.
os.environ.setdefault("CHANNELS_PREFIX", f"tirlab-test-{os.getpid()}")


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # PBKDF2's deliberate slowness is for production logins, not for creating test users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
