# Thin front end over CMake + Ninja. Building needs no root and installs nothing: every
# target that builds first checks what is installed (scripts/install-deps --check), names
# what is missing and how to install it, and builds with what is there. Installing the
# Debian packages is its own step, `make deps` (root and apt; scripts/install-deps), which
# leaves the system's BLAS/LAPACK alternatives as they were.
# The developer targets here build with TL_WERROR=ON (warnings are errors); a plain `cmake`
# build has it off.
BUILD ?= build
JOBS ?= $(shell nproc)
DEV_FLAGS ?= -DTL_WERROR=ON
CMAKE_FLAGS ?=
CTEST_FLAGS ?= --output-on-failure -j$(JOBS)

PHONY_TCI := bench-fanout bench-tci
.PHONY: all deps check-deps build-release build-release-clang build build-clang demo $(PHONY_TCI) test test-asan test-tsan bench bench-replacements bench-einsum bench-einsum-terms bench-einsum-threads bench-plot scale-out install format format-check lint clean python \
	fuzz soak valgrind test-aarch64 test-reference test-openblas

all: build

deps:
	@scripts/install-deps

# Reports what is missing (and the command that installs it); never installs.
check-deps:
	@scripts/install-deps --check

build: check-deps
	cmake -S . -B $(BUILD) -G Ninja $(DEV_FLAGS) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

# The same build with clang (warnings are errors under both compilers).
build-clang: check-deps
	CC=clang cmake -S . -B build-clang -G Ninja $(DEV_FLAGS) $(CMAKE_FLAGS)
	cmake --build build-clang -j$(JOBS)

# Release builds (what most users configure), with gcc and with clang: -O3 inlining finds
# maybe-uninitialized warnings the RelWithDebInfo build does not. Tests and benches built too.
build-release: check-deps
	cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTL_BUILD_PYTHON=OFF $(DEV_FLAGS) $(CMAKE_FLAGS)
	cmake --build build-release -j$(JOBS)

build-release-clang: check-deps
	CC=clang cmake -S . -B build-release-clang -G Ninja -DCMAKE_BUILD_TYPE=Release -DTL_BUILD_PYTHON=OFF $(DEV_FLAGS) $(CMAKE_FLAGS)
	cmake --build build-release-clang -j$(JOBS)

# The demo: the adaptive patched TCI of a built-in 2-D function on the lanes, and its report
# (docs/tci.md). The fan-out stand-in stays as a benchmark: `make bench-fanout`.
demo: build
	$(BUILD)/examples/tenlane-tci --function sharp2d --save $(BUILD)/tci-sharp2d.tlt

bench-fanout: build
	$(BUILD)/examples/tenlane-fanout

# The TCI benchmark table (docs/tci.md): lanes vs one lane vs OpenMP tasks vs unpatched.
# (the functions that patch: osc1d fits one patch, and smooth3d at 1e-10 runs for many
# minutes, docs/tci.md; `tenlane-tci --bench` alone runs every built-in)
bench-tci: build
	$(BUILD)/examples/tenlane-tci --bench --function gauss2d
	$(BUILD)/examples/tenlane-tci --bench --function sharp2d

test: build
	cd $(BUILD) && ctest $(CTEST_FLAGS)

# The suite on another provider (cmake/Providers.cmake, docs/platforms.md), each in its own
# tree: `test-reference` on Netlib's reference BLAS and LAPACK (build-reference),
# `test-openblas` on OpenBLAS's serial build (build-openblas; libopenblas-serial-dev).
# PROVIDER_CTEST_ARGS narrows the run (CI: -L 'kernels|linalg').
PROVIDER_CTEST_ARGS ?=
test-reference test-openblas: check-deps
	cmake -S . -B build-$(@:test-%=%) -G Ninja -DTL_PROVIDER=$(@:test-%=%) $(DEV_FLAGS) $(CMAKE_FLAGS)
	cmake --build build-$(@:test-%=%) -j$(JOBS)
	cd build-$(@:test-%=%) && ctest $(CTEST_FLAGS) $(PROVIDER_CTEST_ARGS)

# The library and its tests cross-built for aarch64 (Debian's gcc-aarch64-linux-gnu, the arm64
# providers through multiarch), the suite run under qemu-user. Needs
# `sudo scripts/install-deps --cross-aarch64` first (docs/platforms.md).
test-aarch64:
	JOBS=$(JOBS) scripts/cross-aarch64 build-aarch64

test-asan: check-deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTL_SANITIZE=address -DTL_BUILD_BENCHES=OFF $(DEV_FLAGS) $(CMAKE_FLAGS)
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest $(CTEST_FLAGS)

# TSan (gcc 12, clang 14) cannot map its shadow memory when the kernel randomizes mmap with
# more than 28 bits (vm.mmap_rnd_bits = 32 on some newer kernels): run the suite without ASLR
# there. Elsewhere nothing changes (setarch -R is refused in some containers).
TSAN_WRAP := $(shell [ "$$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)" -gt 28 ] && echo "setarch $$(uname -m) -R")

test-tsan: check-deps
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTL_SANITIZE=thread -DTL_BUILD_BENCHES=OFF $(DEV_FLAGS) $(CMAKE_FLAGS)
	cmake --build build-tsan -j$(JOBS)
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" $(TSAN_WRAP) ctest $(CTEST_FLAGS)

# Reliability (docs/reliability.md). `fuzz`: the libFuzzer targets under ASan+UBSan (clang),
# FUZZ_SECONDS each, in build-fuzz. `soak`: the randomized faulty-phase run under ASan for
# SOAK_SECONDS (and at least 10,000 phases; TL_SOAK_SEED=... repeats a run). `valgrind`: the
# whole suite under memcheck, in an unsanitized build-valgrind.
FUZZ_SECONDS ?= 60
SOAK_SECONDS ?= 600

fuzz: check-deps
	scripts/fuzz build-fuzz $(FUZZ_SECONDS)

soak: check-deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTL_SANITIZE=address -DTL_BUILD_BENCHES=OFF $(DEV_FLAGS) $(CMAKE_FLAGS)
	cmake --build build-asan -j$(JOBS) --target test_faulty_phases
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  TL_SOAK_SECONDS=$(SOAK_SECONDS) build-asan/tests/reliability/test_faulty_phases faulty_phases_randomized

valgrind: check-deps
	cmake -S . -B build-valgrind -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTL_BUILD_BENCHES=OFF $(DEV_FLAGS) $(CMAKE_FLAGS)
	cmake --build build-valgrind -j$(JOBS)
	scripts/valgrind-suite build-valgrind $(JOBS)

bench: build
	scripts/run-benches $(BUILD)

# What each of tenlane's hand-written BLAS/LAPACK replacements earns (issue 30's rule: kept
# only for a 15% gain on a user-level route): with and without each, side by side in one
# run, the gain and the verdict (benches/bench_providers.c, bench_replacements). About a
# minute on one core.
bench-replacements: build
	TL_BENCH_PROVIDERS_ONLY=replacements $(BUILD)/benches/providers/bench_providers

# Einsum networks of the einsum benchmark's categories through tenlane (1 and 2 threads)
# and numpy on OpenBLAS serial (scripts/with-openblas) following the same path: time, peak
# memory, ratios (benches/einsum_networks.py).
bench-einsum: build
	scripts/with-openblas $(BUILD) /usr/bin/python3 benches/einsum_networks.py $(BUILD)

# Single einsum terms of each class in all four dtypes, tenlane (1 thread) against numpy's
# np.einsum on the same operands, alternating (benches/einsum_terms.py).
bench-einsum-terms: build
	scripts/with-openblas $(BUILD) /usr/bin/python3 benches/einsum_terms.py $(BUILD)

# Large GEMM, Hadamard, outer-product and permutation steps at 1 and 2 threads: tenlane's
# speedup next to OpenBLAS's threaded GEMM and numpy's loops split over two threads by hand
# (benches/einsum_threads.py), about a minute.
bench-einsum-threads: build
	scripts/with-openblas-pthread $(BUILD) /usr/bin/python3 benches/einsum_threads.py $(BUILD)

# The fan-out sweeps (scripts/fanout-sweep) are run afresh each time: f64, c128 and a bond
# drawn per patch.
# The fan-out over MPI ranks (docs/scale-out.md): the four measured configurations, then the
# model of 10, 100 and 1000 ranks fed with the per-batch costs just measured.
scale-out: build
	/usr/bin/python3 scripts/scale-out-bench $(BUILD)
	/usr/bin/python3 scripts/scale-out-model $(BUILD)/scale-out-costs.json

bench-plot: build
	rm -f $(BUILD)/fanout-sweep.csv $(BUILD)/fanout-sweep-c128.csv $(BUILD)/fanout-sweep-bond-range.csv
	TL_BENCH_PHASE_CSV=$(CURDIR)/$(BUILD)/bench-phase-latency.csv $(BUILD)/benches/tenlane/bench_phase --rounds 3 > /dev/null
	scripts/bench-plot $(BUILD)

install: build
	cmake --install $(BUILD)

# The Python package (docs/python.md): build it, then copy the package folder
# (build/python/tenlane: the .py files, stubs and the _core module) into the user
# site-packages of PYTHON (Debian's interpreter, the one it is built for). In a virtual
# environment use `pip install --no-build-isolation .` instead (pyproject.toml).
PYTHON ?= /usr/bin/python3
python: build
	@site=$$($(PYTHON) -m site --user-site) && mkdir -p "$$site" && \
	  rm -rf "$$site/tenlane" "$$site"/tenlane.*.so && cp -r $(BUILD)/python/tenlane "$$site/" && \
	  cd / && $(PYTHON) -c 'import tenlane; print("make python: import tenlane works in $(PYTHON) (from %s)" % tenlane.__file__)'

# clang-format and cppcheck (scripts/lint); `format` rewrites the C sources in place.
lint: check-deps
	scripts/lint build-lint

format-check:
	find include src tests benches examples python -type f \( -name '*.c' -o -name '*.h' \) -not -path '*/fixtures/*' | xargs clang-format --dry-run -Werror

format:
	find include src tests benches examples python -type f \( -name '*.c' -o -name '*.h' \) -not -path '*/fixtures/*' | xargs clang-format -i

clean:
	rm -rf build build-clang build-release build-release-clang build-reference build-openblas build-asan build-tsan build-lint build-fuzz build-valgrind
