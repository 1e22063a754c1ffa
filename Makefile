# gpulease quick start:
#   make run     build, start gpuleased, run the iota kernel on a leased GPU
#   make check   build and run every test (plus an ASan+UBSan build)
# Both install the Debian packages they need first (scripts/deps.sh).

BUILD       ?= build
BUILD_ASAN  ?= build-asan
JOBS        ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build run check check-asan fuzz install clean

all: build

deps:
	@scripts/deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

run: build
	@scripts/run.sh $(BUILD)

check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) check-asan
	fuzz/run.sh 20

check-asan: deps
	cmake -S . -B $(BUILD_ASAN) -G Ninja -DCMAKE_C_COMPILER=clang -DGL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	cd $(BUILD_ASAN) && ctest --output-on-failure -j $(JOBS)

fuzz: deps
	fuzz/run.sh 60

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) build-fuzz
