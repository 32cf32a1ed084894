# The two commands: `make demo` (see it work) and `make test` (what CI runs). Both make the venv
# and install into it first; `make docs` builds the documentation site into site/.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test docs docs-serve install install-dev system clean

demo: install
	$(BIN)/crawler-dedup demo

test: install-dev system
	$(BIN)/python -m mypy
	$(BIN)/python -m mkdocs build --strict --quiet --site-dir $(VENV)/docs-check
	$(BIN)/python -m pytest -q

docs: install-dev
	$(BIN)/python -m mkdocs build --strict --site-dir site
	@echo "the site is in site/ (open site/index.html, or: make docs-serve)"

docs-serve: install-dev
	$(BIN)/python -m mkdocs serve

# the stamps are remade when pyproject.toml changes, so a new dependency is installed
install: $(VENV)/.stamp-install
install-dev: $(VENV)/.stamp-dev

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.stamp-install: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.stamp-dev: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@ $(VENV)/.stamp-install

system:
	bash scripts/system_packages.sh

clean:
	rm -rf $(VENV) site
