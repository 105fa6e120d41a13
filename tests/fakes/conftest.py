# The fixtures live in tests/fakes/plugin.py; importing them here keeps these tests runnable on their own
# until tests/conftest.py registers the plugin with `pytest_plugins = ["tests.fakes.plugin"]`.
from tests.fakes.plugin import fake_provider, fake_provider_factory  # noqa: F401
