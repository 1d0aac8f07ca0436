# tflearn: the course's commands. Each target creates what it needs from scratch.
#   make test    unit tests + every notebook and solution under nbval (smoke scale)
#   make course  execute the whole course at the default scale into build/ (HTML + index)
#   make lab     JupyterLab on the course
#   make doctor  is this machine ready? (versions, devices, a 2-replica step, a gRPC round trip)
PYTHON ?= python3
PYTHON_LEGACY ?= python3.11
VENV := .venv
LEGACY := .venv-legacy
BIN := $(VENV)/bin
PIP_FLAGS := -q --disable-pip-version-check
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: test unit notebooks course lab doctor lint format exercises env legacy-env clean

env: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml requirements/constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_FLAGS) -c requirements/constraints.txt -e ".[dev]"
	@touch $@

# Lab 01b runs on TensorFlow 2.15 (the last release with Estimators), in its own kernel.
legacy-env: $(LEGACY)/.installed
$(LEGACY)/.installed: requirements/legacy.txt $(VENV)/.installed
	@command -v $(PYTHON_LEGACY) >/dev/null || { echo "Lab 01b needs $(PYTHON_LEGACY) (TensorFlow 2.15 has no wheels for newer Pythons)."; exit 1; }
	@test -x $(LEGACY)/bin/python || $(PYTHON_LEGACY) -m venv $(LEGACY)
	$(LEGACY)/bin/python -m pip install $(PIP_FLAGS) -r requirements/legacy.txt
	$(LEGACY)/bin/python -m pip install $(PIP_FLAGS) --no-deps -e .
	$(LEGACY)/bin/python -m ipykernel install --prefix $(abspath $(VENV)) \
		--name tflearn-legacy --display-name "Python 3.11 (TensorFlow 2.15, legacy)" >/dev/null
	@touch $@

test: env legacy-env
	@echo "== lint (ruff), unit tests, then every notebook and solution under nbval at smoke scale"
	$(BIN)/ruff format --check . && $(BIN)/ruff check .
	TFLEARN_SCALE=smoke $(BIN)/python -m pytest -q tests notebooks solutions \
		--nbval-lax --nbval-cell-timeout=900 --durations=0 -p no:randomly

unit: env
	$(BIN)/python -m pytest -q tests

notebooks: env legacy-env
	TFLEARN_SCALE=smoke $(BIN)/python -m pytest -q notebooks solutions --nbval-lax \
		--nbval-cell-timeout=900 --durations=0

course: env legacy-env
	$(BIN)/python -m tflearn_helpers course --out build

lab: env legacy-env
	$(BIN)/jupyter lab

doctor: env
	$(BIN)/python -m tflearn_helpers doctor

lint: env
	$(BIN)/ruff format --check . && $(BIN)/ruff check .

format: env
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

exercises: env
	$(BIN)/python tools/make_exercises.py

clean:
	rm -rf build $(VENV) $(LEGACY)
