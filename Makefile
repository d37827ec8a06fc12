# The two commands of the README: `make play` and `make test`.

PYTHON ?= python3
VENV ?= .venv
WORLD ?= hollow-manor
BIN := $(VENV)/bin

.PHONY: play test lint check clean

# make play MODEL=mistral-7b downloads a catalog model first (python -m bot model list).
play: $(VENV)/.installed
ifdef MODEL
	$(BIN)/python -m bot model pull $(MODEL)
	GM_MODEL=$(MODEL) $(BIN)/python -m bot play $(WORLD)
else
	$(BIN)/python -m bot play $(WORLD)
endif

test: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

check: $(VENV)/.installed
	$(BIN)/python -m bot check

$(VENV)/.installed: pyproject.toml scripts/install scripts/files-only.txt
	PYTHON=$(PYTHON) sh scripts/install $(VENV)
	touch $@

$(VENV)/.installed-test: pyproject.toml scripts/install scripts/files-only.txt
	PYTHON=$(PYTHON) sh scripts/install $(VENV) test
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV)
