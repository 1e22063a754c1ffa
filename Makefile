# gpulease quick start:
#   make run     build, start gpuleased, run the iota kernel on a leased GPU
#   make check   build and run every test (plus an ASan+UBSan build)
# Both install the Debian packages they need first (scripts/deps.sh).

BUILD       ?= build
BUILD_ASAN  ?= build-asan
BUILD_REL   ?= build-release
JOBS        ?= $(shell nproc)
CMAKE_FLAGS ?=

# Warnings are errors (GL_WERROR) in the builds `make check` and CI make, and
# not in a plain `cmake` build, so a new compiler's new warning cannot break
# someone else's build.
.PHONY: all deps build run run-python check check-asan check-release check-deb check-wheel check-deploy deb fuzz install clean

all: build

deps:
	@scripts/deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

run: build
	@scripts/run.sh $(BUILD)

# The same from Python: python/examples/quickstart.py against a daemon of
# this build.
run-python: build
	@scripts/run_python.sh $(BUILD)

check: deps
	cmake -S . -B $(BUILD) -G Ninja -DGL_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) check-asan
	fuzz/run.sh 20

check-asan: deps
	cmake -S . -B $(BUILD_ASAN) -G Ninja -DCMAKE_C_COMPILER=clang -DGL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DGL_WERROR=ON
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	cd $(BUILD_ASAN) && ctest --output-on-failure -j $(JOBS)

# Release (-O3) builds with gcc and clang, warnings as errors, tests built but
# not run: the optimiser's warnings (maybe-uninitialized, stringop-overflow)
# appear only here.
check-release: deps
	cmake -S . -B $(BUILD_REL)-gcc -G Ninja -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release -DGL_WERROR=ON
	cmake --build $(BUILD_REL)-gcc -j $(JOBS)
	cmake -S . -B $(BUILD_REL)-clang -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release -DGL_WERROR=ON
	cmake --build $(BUILD_REL)-clang -j $(JOBS)

fuzz: deps
	fuzz/run.sh 60

install: build
	cmake --install $(BUILD)

# Debian packages (gpuleased, libgpulease1, libgpulease-dev, gpulease-tools)
# into $(BUILD_DEB)/, built for /usr; cmake/package.cmake says what goes where.
BUILD_DEB ?= build-deb
deb: deps
	cmake -S . -B $(BUILD_DEB) -G Ninja -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=Release \
	  -DGL_BUILD_TESTS=OFF -DGL_WERROR=ON
	cmake --build $(BUILD_DEB) -j $(JOBS)
	cd $(BUILD_DEB) && cpack -G DEB

# The Python package as a user gets it: `pip install ./python` into a
# virtual environment (Debian's Python, its numpy and cffi), the pytest
# suite against that installed package (its bundled libgpulease), and the
# wheel (python -m build). Needs PyPI for scikit-build-core and build.
BUILD_PY ?= build-py
check-wheel: build
	rm -rf $(BUILD_PY) && /usr/bin/python3 -m venv --system-site-packages $(BUILD_PY)
	$(BUILD_PY)/bin/pip install -q ./python
	cd $(BUILD_PY) && GL_TEST_BIN_DIR=$(abspath $(BUILD)) bin/python -m pytest -q -p no:cacheprovider ../python/tests
	$(BUILD_PY)/bin/pip install -q build
	$(BUILD_PY)/bin/python -m build --wheel --outdir $(BUILD_PY)/dist python
	@ls -l $(BUILD_PY)/dist

# Installs the packages on this machine (root: CI) and checks them: an
# example built against the installed header, the installed daemon on the
# emulated device, the installed CLI against it (tests/pkg/test_deb.sh).
check-deb: deb
	tests/pkg/test_deb.sh $(BUILD_DEB)

# The deployments (deploy/): the Kubernetes manifests validated against a
# pinned Kubernetes version (kubernetes-validate from PyPI, pinned, in a
# virtual environment under the build folder), their consistency, the
# ConfigMap's configuration through gpuleased --check-config, the Slurm
# script through bash -n and shellcheck where present.
check-deploy: build
	tests/deploy/test_manifests.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_REL)-gcc $(BUILD_REL)-clang $(BUILD_DEB) $(BUILD_PY) build-python build-fuzz
