# iclrbench — the two commands a newcomer types:
#   make reproduce   create .venv, install, run every paper at smoke scale, print the claims table
#   make test        create .venv, install, run the test suite
# and for reading: make docs (the offline docs site in _site/), make browser-deps (Chromium for the browser tests)
# Only Python 3.11+ is needed beforehand. CPU PyTorch (torch==2.13.0) is installed where the venv has no
# torch yet; to use a GPU build, create .venv and install your own torch first.

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
SCALE  ?= smoke
JOBS   ?= 1
# exact dependency versions (the claims table is bit-for-bit reproducible on these); CONSTRAINTS= installs unpinned
CONSTRAINTS ?= constraints.txt
PYTEST_ARGS ?=

DOCS_OUT ?= _site

.PHONY: constraints install reproduce test readme export cards clean-nbs sync lab docs browser-deps

$(VENV)/.installed: pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "iclrbench needs Python 3.11 or newer; set PYTHON=/path/to/python3.11"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -c 'import torch' 2>/dev/null || $(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet $(if $(CONSTRAINTS),-c $(CONSTRAINTS)) -e '.[dev]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name python3 >/dev/null
	touch $@

install: $(VENV)/.installed

# after a deliberate upgrade of the venv: write its versions (less torch and iclrbench) to constraints.txt
constraints:
	{ sed -n '1,4p' constraints.txt; $(BIN)/python -m pip freeze --exclude-editable | grep -v -i -E '^(torch|iclrbench|triton)==|^nvidia-' | LC_ALL=C sort -f; } > constraints.txt.new && mv constraints.txt.new constraints.txt

reproduce: install
	$(BIN)/iclrbench reproduce --scale $(SCALE) --jobs $(JOBS)

# Two passes: everything that is not timed against a wall-clock budget runs on two pytest-xdist workers;
# the notebook-budget runs and the browser tests run alone afterwards, so their timings are not shared.
# The second pass runs even when the first fails, so one run reports every failure; make fails if either did.
test: install
	@status=0; \
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -m "not serial and not browser" $(PYTEST_ARGS) || status=$$?; \
	$(BIN)/python -m pytest -q -m "serial or browser" $(PYTEST_ARGS) || status=$$?; \
	exit $$status

# notebooks → package, card index, clean notebooks, README from nbs/index.ipynb
export: install
	$(BIN)/nbdev-export

# outputs and execution counts out (cell tags kept), then nbdev's metadata cleaning
clean-nbs: install
	$(BIN)/python -c 'from iclrbench.site.hygiene import strip_outputs; [print("stripped outputs:", p) for p in strip_outputs()]'
	$(BIN)/nbdev-clean

readme: install
	if command -v quarto >/dev/null; then $(BIN)/nbdev-readme; else $(BIN)/python -c 'from iclrbench.site.readme import render_readme; render_readme()'; fi

# the card index (iclrbench/papers/_cards.json): what listing, validation and the site read instead of importing papers
cards: install
	$(BIN)/python -c 'from iclrbench.core.registry import write_card_index; print(write_card_index())'

sync: export cards clean-nbs readme

# JupyterLab cleans every notebook it saves under nbs/ (no outputs in the sources); --allow-root only when root
lab: install
	$(BIN)/python -m pip install --quiet jupyterlab && $(BIN)/jupyter lab nbs/ \
	  --FileContentsManager.pre_save_hook=iclrbench.site.hygiene.clean_on_save $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# the docs site: nbdev-docs where Quarto is installed, else the offline HTML site in $(DOCS_OUT); it reuses the runs
# `make reproduce` made at this commit and runs only the papers that have none
docs: install
	$(BIN)/iclrbench docs --out $(DOCS_OUT) --jobs $(JOBS) --reuse

# Debian's Chromium for the browser tests (pytest -m browser); never `playwright install`.
# sudo only when not root; without apt-get the browser tests skip and say why.
browser-deps:
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then echo "chromium: $$(command -v chromium || command -v chromium-browser)"; \
	elif command -v apt-get >/dev/null; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null \
	    && echo "chromium installed: $$(command -v chromium)" \
	    || echo "warning: could not install chromium with apt-get; the browser tests will be skipped"; \
	else echo "warning: apt-get not available: install Chromium yourself (or set ICLRBENCH_CHROMIUM); the browser tests will be skipped"; fi
