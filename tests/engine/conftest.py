from __future__ import annotations

import pytest

from bot.model import ScriptedModel
from tests.engine.upkeep.test_memory import scripted_memory


@pytest.fixture
def memory_model(scripted: ScriptedModel) -> ScriptedModel:
    """The scripted model answering the memory's jobs traceably, and GM turns with a line."""
    scripted.default = scripted_memory
    return scripted
