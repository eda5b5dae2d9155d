# Thin front end over CMake + Ninja. Every target that builds first installs the Debian
# packages the build needs (scripts/install-deps, a no-op when they are present).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?= --output-on-failure -j$(JOBS)

.PHONY: all deps build demo test test-asan test-tsan bench bench-plot install format format-check lint clean

all: build

deps:
	@scripts/install-deps

build: deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	$(BUILD)/examples/tenlane-demo

test: build
	cd $(BUILD) && ctest $(CTEST_FLAGS)

test-asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTL_SANITIZE=address -DTL_BUILD_BENCHES=OFF $(CMAKE_FLAGS)
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest $(CTEST_FLAGS)

test-tsan: deps
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTL_SANITIZE=thread -DTL_BUILD_BENCHES=OFF $(CMAKE_FLAGS)
	cmake --build build-tsan -j$(JOBS)
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" ctest $(CTEST_FLAGS)

bench: build
	scripts/run-benches $(BUILD)

bench-plot: build
	scripts/bench-plot $(BUILD)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf build build-asan build-tsan
