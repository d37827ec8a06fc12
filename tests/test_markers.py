"""The suite's markers: ``llm`` and ``slow`` are registered and strict, and a model fixture marks its tests.

``pytest -m "not llm and not slow"`` is the quick run; it only leaves out what it should if a misspelt marker
is an error (``--strict-markers``) and a test that loads a model through a fixture is marked without anyone
remembering to.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import PROJECT


def test_the_markers_are_registered_and_a_misspelt_one_is_an_error(pytestconfig: pytest.Config):
    registered = {line.split(":")[0].split("(")[0].strip() for line in pytestconfig.getini("markers")}
    assert {"llm", "slow"} <= registered
    assert "--strict-markers" in pytestconfig.getini("addopts")


def test_a_test_that_uses_a_model_fixture_is_marked_llm():
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "llm", "-p", "no:cacheprovider",
         "tests/model/test_llama.py", "tests/engine/test_real_model.py"],
        cwd=PROJECT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stdout + listed.stderr
    ids = {line for line in listed.stdout.splitlines() if "::" in line}
    # Through the module's ``llama`` fixture, and through ``real_engine`` (an async fixture that loads one).
    assert "tests/model/test_llama.py::test_real_model_writes_a_reply_and_streams_it" in ids
    assert "tests/engine/test_real_model.py::test_the_real_model_extracts_facts_that_cite_their_messages" in ids
    # A test of the same module that loads no model stays in the quick run.
    assert "tests/model/test_llama.py::test_the_placement_says_where_the_layers_run" not in ids
