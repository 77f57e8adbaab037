# The course's two commands: `make lab` (JupyterLab on the course) and `make test` (the whole
# suite). Both create .venv on first use and are quick when it is already there.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Installed before the project so pip takes this exact build (a CPU wheel on the course's
# machines) instead of resolving the open range in pyproject.toml to a large CUDA build.
TORCH_SPEC ?= torch==2.13.0
INSTALLED := $(VENV)/.installed
# JupyterLab's settings overrides for this environment only ({sys.prefix}/share/jupyter/lab/
# settings), never the learner's home: the first start does not ask whether to fetch Jupyter's
# news (the course needs no network once installed), and Markdown files such as the course's
# first page, notebooks/README.md, open rendered rather than in the text editor.
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
NO_NEWS := "@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}
RENDERED_MARKDOWN := "@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"markdown": "Markdown Preview"}}
LAB_SETTINGS := {$(NO_NEWS), $(RENDERED_MARKDOWN)}

.PHONY: lab test test-system test-other-cpu test-other-torch test-breakage test-learner sync notebooks html bench install clean

install: $(INSTALLED) $(LAB_OVERRIDES)

$(INSTALLED): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install --quiet "$(TORCH_SPEC)"
	@# uv resolves and installs the rest from PyPI in seconds where pip takes a minute; it keeps
	@# the torch installed above, which satisfies the project's range. --compile-bytecode writes
	@# the .pyc files now, on every core, instead of in each kernel and worker that first imports
	@# a library (a fresh clone's make test: 232 s without it, 213 s with it).
	$(PY) -m pip install --quiet uv
	$(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) -e ".[dev]"
	@# The distribution was called `stepbystep` before it became `stepbystep-course`: drop the
	@# old name's leftover entry from a .venv made before the rename (the files stay).
	$(PY) -m pip uninstall --quiet --yes stepbystep 2>/dev/null || true
	touch $@

$(LAB_OVERRIDES): $(INSTALLED) Makefile
	mkdir -p $(@D)
	echo '$(LAB_SETTINGS)' > $@

# Jupyter refuses to run as root unless told; containers and CI machines often are root.
# JupyterLab serves notebooks/ and opens its README.md, the learner's first page; the address it
# prints (for a machine where no browser opens by itself) leads there too. LAB_ARGS passes options
# on to JupyterLab: make lab LAB_ARGS="--no-browser --port=8899".
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
FIRST_PAGE := /lab/tree/README.md
LAB_ARGS ?=
lab: install
	$(VENV)/bin/jupyter lab $(ALLOW_ROOT) --ServerApp.root_dir=notebooks --LabApp.default_url=$(FIRST_PAGE) $(LAB_ARGS)

# PyTorch on one thread, as the chapters' committed outputs were computed (conftest.py sets it
# for every pytest run that compares outputs too; here it also covers make notebooks and the
# benchmarks).
ONE_THREAD := OMP_NUM_THREADS=1

# The layers' direction, then one pytest call for the rest, spread over every core so that no
# core waits for another stage: the unit and the system tests (browser, site build, make lab,
# fresh Pythons, benchmarks) and every chapter re-executed and compared with its committed
# outputs, the strict pass of `pytest --nbval notebooks/` (conftest.py adds the sanitising
# rules and the kernel, and keeps each notebook and each test file on one worker).
test: install
	$(VENV)/bin/lint-imports --no-cache
	$(ONE_THREAD) $(PY) -m pytest -m "not breakage" --nbval tests/ notebooks/

# The system tests alone: slower, each starts a browser, a site build, a server or a fresh Python.
test-system: $(INSTALLED)
	$(ONE_THREAD) $(PY) -m pytest -m system tests/

# The same strict pass as a CPU without this machine's vector instructions computes it (no
# AVX-512/AVX2 kernels in ATen, oneDNN or MKL): every output that would differ on another
# laptop, a GPU or another torch release must be ignored and bounded by a check, never compared.
OTHER_CPU := ATEN_CPU_CAPABILITY=default DNNL_MAX_CPU_ISA=SSE41 MKL_ENABLE_INSTRUCTIONS=SSE4_2
test-other-cpu: $(INSTALLED)
	$(ONE_THREAD) $(OTHER_CPU) $(PY) -m pytest --nbval notebooks/

# The same strict pass on another torch release, in a virtual environment of its own
# (.venv-torch-2.7.0 for the default, the oldest release the project declares), so that an output
# one release prints differently is caught here, not by an instructor. Another release:
# make test-other-torch TORCH_SPEC="torch==2.11.0". PyPI's Linux wheels of these releases are CUDA
# builds of a few GB; pip keeps them in its cache, and the environment stays for the next run.
OTHER_TORCH := $(if $(filter command line environment,$(origin TORCH_SPEC)),$(TORCH_SPEC),torch==2.7.0)
OTHER_VENV := .venv-$(subst ==,-,$(OTHER_TORCH))
test-other-torch:
	$(MAKE) --no-print-directory VENV=$(OTHER_VENV) TORCH_SPEC="$(OTHER_TORCH)" $(OTHER_VENV)/.installed
	$(OTHER_VENV)/bin/python -c "import torch; print('torch', torch.__version__)"
	$(ONE_THREAD) $(OTHER_VENV)/bin/python -m pytest --nbval notebooks/

# Each chapter must fail when the idea it teaches is broken in the package (a kernel, a mask,
# an encoding, a training step): proof that the notebooks' checks check something.
test-breakage: $(INSTALLED)
	$(ONE_THREAD) $(PY) -m pytest -m breakage tests/

# Every chapter top to bottom in a fresh kernel at PyTorch's default thread count, as a learner
# runs it in `make lab`: nbval's lax mode compares no output but fails on an error, and a claim
# that does not hold is one (conftest.py leaves the thread count alone in this mode). One chapter
# at a time (-n 0), as in JupyterLab: two kernels each on every core would only wait for each other.
test-learner: $(INSTALLED)
	env -u OMP_NUM_THREADS $(PY) -m pytest -n 0 --nbval-lax notebooks/

sync: $(INSTALLED)
	@set -e; for nb in notebooks/[0-9]*.py; do \
		[ -e "$$nb" ] || continue; \
		$(VENV)/bin/jupytext --sync "$$nb"; \
	done

# Re-execute every chapter from its .py source in a clean kernel and write the .ipynb with
# its outputs: the committed notebooks are produced by this command only.
# One chapter: make notebooks NOTEBOOKS=notebooks/01_kernel_regression.py
NOTEBOOKS ?= $(wildcard notebooks/[0-9]*.py)
NB_METADATA := {"jupytext": {"notebook_metadata_filter": "-all", "cell_metadata_filter": "tags,-all"}}
notebooks: $(INSTALLED)
	@set -e; for py in $(NOTEBOOKS); do \
		echo "executing $$py"; \
		$(ONE_THREAD) $(VENV)/bin/jupytext --to ipynb --set-kernel python3 \
			--update-metadata '$(NB_METADATA)' --execute "$$py"; \
	done

# The course as a website in site/ (open site/index.html), for reading before installing:
# Sphinx with MyST-NB renders README.md and the committed, executed notebooks (nothing is
# re-executed, nothing downloaded); its configuration is notebooks/_site/conf.py.
html: $(INSTALLED)
	$(VENV)/bin/sphinx-build -b html -q -c notebooks/_site . site
	@echo "The site is in site/: open site/index.html"

# Speed as ratios against PyTorch, measured side by side; writes benchmarks/RESULTS.md.
bench: $(INSTALLED)
	$(ONE_THREAD) $(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) .venv-torch-* .pytest_cache .hypothesis
