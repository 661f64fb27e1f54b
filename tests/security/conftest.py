"""The service tests' fixtures (clean environment, settings on this test's own streams); the
Redis client is the suite's (tests/conftest.py)."""

from tests.service.conftest import (  # noqa: F401 - fixtures, found by pytest by name
    _no_thoughtline_environment,
    settings,
)
