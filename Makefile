# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# xdp-rl: one entry point.
#   make            build build/xdp-rl (the BPF object is embedded); installs nothing
#   make test       unit tables (BPF_PROG_TEST_RUN) on each source table and netns
#                   end-to-end tests, then the kernel matrix (make test-kernels),
#                   the unit tests again with SANITIZE=1, then make lint
#   make test-kernels  unit, model and e2e tests in each kernel of KERNELS
#                   (default "6.1 6.12 running": Debian's, under qemu, and this one)
#   make lint       clang-format check, scan-build, cppcheck, shellcheck, layers
#   make deps       install what is missing from Debian (scripts/deps.sh; test and demo
#                   run it first); every other goal probes (scripts/probe.sh)
#   make demo       a flood against a well-behaved source, in namespaces
#   make bench      per-packet cost and memory, tables into doc/costs.md
#   make install    the binary, man page, completion, units, examples under
#                   $(PREFIX) (/usr/local), in $(DESTDIR); make uninstall
#   make deb        a Debian package, build/xdp-rl_$(VERSION)_ARCH.deb
#   make man        doc/xdp-rl.8 and doc/xdp-rl.conf.5 from their .scd (scdoc)
#   make unit T=PATTERN  only the unit tests whose names match (shell globs:
#                   T='lru_*', T='config_*,rules_*' or "A B"; build/test_* --list)
#   TABLE=lru       unit, model-test and e2e on the LRU table (load --table lru);
#                   default buckets
#   make crash-test every step of every state change killed (make test: a sample)
#   make fuzz       each libFuzzer target for FUZZ_SECONDS (default 600; make test: 10)
#   V=1             show the commands
#   SANITIZE=1      build into build/san with ASan and UBSan

VERSION    := 0.1.0
# SANITIZE=1: the user-space code (the CLI, the unit tests, the bench) built
# with AddressSanitizer and UndefinedBehaviorSanitizer, everything in
# build/san so that plain and sanitized objects never mix (the BPF objects
# are made there too, the same). `make SANITIZE=1 unit` runs the unit tests
# so; any report stops the test binary with a failure.
ifeq ($(SANITIZE),1)
BUILD      := build/san
# UBSan's null-argument checks make GCC see a NULL %s argument on the path
# past a failed check, a false -Wformat-overflow; the plain build keeps it.
SAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -Wno-format-overflow
UNIT_ENV   := export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1;
else
BUILD      := build
SAN_FLAGS  :=
UNIT_ENV   :=
endif
PREFIX     ?= /usr/local
CLANG      ?= clang
CC         ?= cc
BPFTOOL    ?= bpftool
PYTHON     ?= /usr/bin/python3
ARCH       := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
MULTIARCH  := $(shell $(CC) -print-multiarch 2>/dev/null)

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.PHONY: all test unit unit-prog model-test e2e crash-test test-kernels demo bench install \
	uninstall clean \
	deps lint lint-format lint-scan lint-cppcheck lint-shell lint-layers fuzz fuzz-build \
	man check-man deb

WARN       := -Wall -Wextra -Werror
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) $(WARN) \
              -Wno-unused-parameter -Iinclude -I/usr/include/$(MULTIARCH)
CFLAGS     ?= -O2 -g
# Paths are built from bounded parts; truncation warnings on them are noise.
# user/ is three layers, a folder each (HACKING.md): lib/ (the bottom),
# the models in user/ itself, and cmd/ (the commands). A file includes its
# own layer's headers and those below; scripts/check-layers.sh checks it.
USER_INC    = -Iinclude -Iuser -Iuser/lib -I$(BUILD)
USER_CFLAGS = $(CPPFLAGS) $(CFLAGS) $(WARN) -Wno-format-truncation -std=gnu11 -D_GNU_SOURCE -DXDP_RL_VERSION='"$(VERSION)"' \
              $(USER_INC) -MMD -MP $(SAN_FLAGS)
# One file to copy: libbpf, libelf, zlib, libcap and OpenSSL (the fleet
# agent's TLS: libssl, libcrypto) are linked statically. STATIC=0 links them
# dynamically, as a distribution's package does (make deb): its
# dependencies then say which libraries it takes.
STATIC      ?= 1
ifeq ($(STATIC),1)
STATIC_LIBS := -Wl,-Bstatic -lxdp -lbpf -lelf -lz -lcap -lssl -lcrypto -Wl,-Bdynamic
else
STATIC_LIBS := -lxdp -lbpf -lcap -lssl -lcrypto
endif
# libmicrohttpd (the exporter's HTTP server) is linked dynamically: Debian's
# is built with GnuTLS, whose static libraries Debian does not ship.
LDLIBS      := $(STATIC_LIBS) -lmicrohttpd

BPF_SRC    := bpf/xdp_rl.bpf.c
BPF_OBJ    := $(BUILD)/xdp_rl.bpf.o
SKEL       := $(BUILD)/xdp_rl.skel.h
USER_SRC   := $(wildcard user/lib/*.c user/*.c user/cmd/*.c)
USER_OBJ   := $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRC))
BIN        := $(BUILD)/xdp-rl
UNIT_BIN   := $(BUILD)/test_prog

all: $(BIN)

# Dependencies are probed, not assumed: a build (make, make unit, ...)
# looks for the tools and headers it needs, by themselves, whatever
# installed them (scripts/probe.sh), and stops naming what is missing; make
# lint does the same for its tools. Only the deps step installs, from
# Debian's packages (scripts/deps.sh, as root): make deps, and the README's
# two commands, make test and make demo, which run it first so that they
# do all their set-up on a fresh Debian machine.
INSTALL_GOALS := deps test demo
ifneq ($(filter $(INSTALL_GOALS),$(MAKECMDGOALS)),)
DEPS_OK := deps
else
DEPS_OK := $(BUILD)/.deps-ok
endif
$(BUILD)/.deps-ok: scripts/probe.sh
	$(Q)mkdir -p $(BUILD)
	$(Q)m=$$(CC="$(CC)" CLANG="$(CLANG)" BPFTOOL="$(BPFTOOL)" PYTHON="$(PYTHON)" \
		scripts/probe.sh build) || { \
		echo "make: cannot build: $${m}." >&2; \
		echo "make: on Debian, 'sudo make deps' installs them (scripts/deps.sh)." >&2; \
		exit 1; }
	$(Q)touch $@

LINT_OK := $(BUILD)/.lint-ok
$(BUILD)/.lint-ok: scripts/probe.sh
	$(Q)mkdir -p $(BUILD)
	$(Q)m=$$(CLANG_FORMAT="$(CLANG_FORMAT)" SCAN_BUILD="$(SCAN_BUILD)" CPPCHECK="$(CPPCHECK)" \
		SHELLCHECK="$(SHELLCHECK)" scripts/probe.sh lint) || { \
		echo "make: cannot lint: $${m}." >&2; \
		echo "make: on Debian, 'sudo make deps' installs them (scripts/deps.sh)." >&2; \
		exit 1; }
	$(Q)touch $@

deps:
	$(Q)scripts/deps.sh

# Minimum kernel: 6.1. The program calls bpf_ktime_get_tai_ns (the clock of
# --aligned windows, a live setting), which older kernels refuse at load.
# The build host may not be the target, so an older one is only warned
# about; the minimum libbpf (1.0) is checked by the compiler (user/lib/skel.c).
KERNEL_MIN     := 6.1
KERNEL_RELEASE ?= $(shell uname -r)
ifeq ($(MAKELEVEL),0)
ifneq ($(firstword $(shell printf '%s\n' $(KERNEL_MIN) $(KERNEL_RELEASE) | sort -V)),$(KERNEL_MIN))
$(warning this kernel ($(KERNEL_RELEASE)) is older than $(KERNEL_MIN): xdp-rl builds, \
  but its program needs Linux $(KERNEL_MIN) or later to load)
endif
endif

# The object is checked against the stack the oldest supported verifier
# allows a chain of calls (scripts/check-stack.py): a program that fits on
# a newer kernel only is refused here, not by Linux 6.1 at load.
LLVM_OBJDUMP ?= $(call tool,llvm-objdump llvm-objdump-14)

$(BPF_OBJ): $(BPF_SRC) $(wildcard bpf/*.h) include/xdp_rl.h scripts/check-stack.py | $(DEPS_OK)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)LLVM_OBJDUMP=$(LLVM_OBJDUMP) $(PYTHON) scripts/check-stack.py $@

$(SKEL): $(BPF_OBJ)
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name xdp_rl > $@

# Whether the kernel runs libxdp's dispatcher (user/lib/dispatch.c).
PROBE_OBJ  := $(BUILD)/probe.bpf.o
PROBE_SKEL := $(BUILD)/probe.skel.h

$(PROBE_OBJ): bpf/probe.bpf.c | $(DEPS_OK)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(PROBE_SKEL): $(PROBE_OBJ)
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name probe > $@

# Only what includes the skeleton waits for it (and is made again when the
# program changes); the rest of user/ does not.
SKEL_USERS := $(BUILD)/user/lib/skel.o $(BUILD)/user/loader.o
$(SKEL_USERS): $(SKEL)
$(BUILD)/user/lib/dispatch.o: $(PROBE_SKEL)

$(BUILD)/user/%.o: user/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -c $< -o $@

$(BIN): $(USER_OBJ)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

# The crash test's xdp-rl: the same, with its kill points live (user/lib/fault.h).
# Built for the tests only, never installed.
FAULT_BIN  := $(BUILD)/xdp-rl-faults

$(BUILD)/user/lib/fault-on.o: user/lib/fault.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -DXDP_RL_FAULTS -c $< -o $@

$(FAULT_BIN): $(filter-out $(BUILD)/user/lib/fault.o,$(USER_OBJ)) $(BUILD)/user/lib/fault-on.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

# ---- make unit (tests/unit) ----
# build/test_user: user-space code alone (no root, no kernel). build/test_prog:
# the XDP program through BPF_PROG_TEST_RUN (tests/unit/harness.c and every
# other tests/unit/test_*.c). Both take their main() and their assertions from
# tests/unit/unit.c. The harness walks many sources with the bench's wrapper
# (tests/bench/wrap.bpf.c).
UNIT_DIR       := $(BUILD)/tests
UNIT_USER_BIN  := $(BUILD)/test_user
# tests/unit/test_user*.c need no root and no kernel: build/test_user.
UNIT_USER_SRC  := $(wildcard tests/unit/test_user*.c)
UNIT_PROG_SRC  := tests/unit/harness.c tests/unit/kept.c tests/unit/model.c \
                  $(filter-out $(UNIT_USER_SRC),$(wildcard tests/unit/test_*.c))
UNIT_PROG_OBJ  := $(patsubst tests/unit/%.c,$(UNIT_DIR)/%.o,tests/unit/unit.c $(UNIT_PROG_SRC))
UNIT_USER_OBJ  := $(patsubst tests/unit/%.c,$(UNIT_DIR)/%.o,tests/unit/unit.c $(UNIT_USER_SRC))
# The CLI's objects below its commands (not user/cmd/) as an
# archive: each test binary takes from it only the objects it needs (the
# linker pulls a member only for a symbol), whatever they come to need.
UNIT_LIB       := $(UNIT_DIR)/libxdp-rl.a
UNIT_LIB_OBJ   := $(filter-out $(BUILD)/user/cmd/%,$(USER_OBJ))

$(UNIT_DIR)/%.o: tests/unit/%.c $(SKEL) $(BUILD)/bench/wrap.skel.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -I$(BUILD)/bench -Itests/bench \
		-Wno-missing-field-initializers -c $< -o $@

$(UNIT_LIB): $(UNIT_LIB_OBJ)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(UNIT_BIN): $(UNIT_PROG_OBJ) $(UNIT_LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(SAN_FLAGS) -o $@ $^ $(LDLIBS) -lpthread

$(UNIT_USER_BIN): $(UNIT_USER_OBJ) $(UNIT_LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

-include $(USER_OBJ:.o=.d) $(UNIT_PROG_OBJ:.o=.d) $(UNIT_USER_OBJ:.o=.d)

# make test: the suite, then the user-space code again under ASan and UBSan
# (the unit tests with SANITIZE=1; test_prog's need root, as the suite's
# do), then make lint. CI runs this (.ci/run). Both source tables: the
# unit tests of the program (test_prog) run on each, the LRU table's in
# test-kernels' row for this machine's kernel (not twice), and the model
# test for 20 s on each; the e2e tests marked both_tables (what a source
# passes, and what get, top, reset, charge and status say of it) run on
# each, the others on the bucket table (conftest.py).
test: unit e2e
	$(Q)$(MAKE) --no-print-directory TABLE=lru unit T=model
	$(Q)$(MAKE) --no-print-directory test-kernels
ifneq ($(SANITIZE),1)
	$(Q)$(MAKE) --no-print-directory SANITIZE=1 unit
endif
	$(Q)$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_TEST_SECONDS)
	$(Q)$(MAKE) --no-print-directory lint

# make unit: test_user, then test_prog (both run; it fails if either fails).
# T=PATTERN (shell globs on the names: T='lru_*', T="A B", T=A,B) runs the
# tests that match, in each binary that has one; a pattern that matches no
# test is an error. Each test runs in a child process of its own (a crash
# fails that test, the run goes on) and prints a line; XDP_RL_UNIT_VERBOSE=1
# prints every assertion, XDP_RL_UNIT_TIMEOUT a test's time limit (300 s,
# more with MODEL_SECONDS). tests/unit/unit.c says more.
comma := ,
UNIT_T := $(strip $(subst $(comma), ,$(T)))
# The model test (tests/unit/test_model.c): MODEL_SECONDS (default 20),
# MODEL_SEED (default a new one, printed), MODEL_SCENARIO (that one alone).
MODEL_ENV := $(if $(MODEL_SECONDS),export XDP_RL_MODEL_SECONDS=$(MODEL_SECONDS);) \
             $(if $(MODEL_SEED),export XDP_RL_MODEL_SEED=$(MODEL_SEED);) \
             $(if $(MODEL_SCENARIO),export XDP_RL_MODEL_SCENARIO=$(MODEL_SCENARIO);)
# TABLE=buckets|lru: the source table the program's tests load (load --table).
TABLE_NAMES := buckets lru
ifneq ($(TABLE),)
ifeq ($(filter $(TABLE),$(TABLE_NAMES)),)
$(error TABLE must be one of: $(TABLE_NAMES))
endif
endif
TABLE_ENV := $(if $(TABLE),export XDP_RL_TEST_TABLE=$(TABLE) XDP_RL_E2E_TABLE=$(TABLE);)

unit: $(UNIT_USER_BIN) $(UNIT_BIN)
	$(Q)$(UNIT_ENV) $(MODEL_ENV) $(TABLE_ENV) set -f; s=0; u=; p=; \
	for n in $(UNIT_T); do \
		m=; \
		if $(UNIT_USER_BIN) --list "$$n" >/dev/null 2>&1; then u="$$u $$n"; m=1; fi; \
		if $(UNIT_BIN) --list "$$n" >/dev/null 2>&1; then p="$$p $$n"; m=1; fi; \
		if [ -z "$$m" ]; then echo "make unit: no test matches '$$n'; the tests are:" >&2; \
			$(UNIT_USER_BIN) --list >&2; $(UNIT_BIN) --list >&2; exit 2; fi; \
	done; \
	if [ -z "$(UNIT_T)" ] || [ -n "$$u" ]; then $(UNIT_USER_BIN) $$u || s=$$?; fi; \
	if [ -z "$(UNIT_T)" ] || [ -n "$$p" ]; then $(UNIT_BIN) $$p || s=$$?; fi; \
	exit $$s

# The program's tests alone (test_prog: make test runs them again with TABLE=lru).
unit-prog: $(UNIT_BIN)
	$(Q)$(UNIT_ENV) $(MODEL_ENV) $(TABLE_ENV) $(UNIT_BIN)

# The model test alone, long: 10 minutes unless MODEL_SECONDS says otherwise.
model-test: $(UNIT_BIN)
	$(Q)$(MAKE) --no-print-directory unit T=model MODEL_SECONDS=$(or $(MODEL_SECONDS),600)

# promtool, which checks `xdp-rl metrics` (tests/e2e/test_metrics.py): taken
# from Debian's prometheus package without installing it (scripts/promtool.sh).
PROMTOOL := build/promtool

$(PROMTOOL): scripts/promtool.sh
	$(call msg,FETCH,$@)
	$(Q)scripts/promtool.sh $@ && touch $@

# The e2e tests run this build's binaries (build/san's with SANITIZE=1).
E2E_ENV := XDP_RL_BUILD=$(abspath $(BUILD)) XDP_RL_PROMTOOL=$(abspath $(PROMTOOL))

e2e: $(BIN) $(FAULT_BIN) $(PROMTOOL)
	$(Q)$(TABLE_ENV) $(E2E_ENV) $(PYTHON) -m pytest -q tests/e2e

# Every kill point of every change (make test kills a sample of them).
crash-test: $(BIN) $(FAULT_BIN)
	$(Q)$(E2E_ENV) XDP_RL_CRASH_ALL=1 $(PYTHON) -m pytest -q tests/e2e/test_crash.py

# ---- make test-kernels (tests/kernels): the kernel matrix ----
# In each kernel of KERNELS, the program's unit tests and the model test
# (MODEL_SECONDS, default 5) on both tables, and the e2e tests marked
# `kernels` (on both tables here, on one in each guest, the guests taking
# them in turn: tests/kernels/matrix.sh); then a table, kernel x table x
# suite (build/kernels/summary).
# A Debian series (6.1, 6.12) is the newest linux-image of it in the
# archive, downloaded once into KERNELS_CACHE (~/.cache/xdp-rl/kernels)
# and booted under qemu on this machine's root; "running" is this
# machine's kernel. make test runs it.
KERNELS ?= 6.1 6.12 running

test-kernels: $(BIN) $(FAULT_BIN) $(UNIT_BIN)
	$(Q)KERNELS="$(KERNELS)" $(if $(MODEL_SECONDS),MODEL_SECONDS=$(MODEL_SECONDS)) \
		tests/kernels/matrix.sh $(BUILD)

demo: $(BIN)
	$(Q)scripts/demo.sh $(BIN)

# ---- make bench (tests/bench: benchmark only, never part of make test) ----
# The bench's own BPF programs and skeletons, and bench_prog, in build/bench/.
BENCH_DIR   := $(BUILD)/bench
BENCH_BPF   := bare wrap plain gen
BENCH_SKELS := $(patsubst %,$(BENCH_DIR)/%.skel.h,$(BENCH_BPF))
BENCH_SRC   := $(filter-out %.bpf.c,$(wildcard tests/bench/*.c))
BENCH_OBJ   := $(patsubst tests/bench/%.c,$(BENCH_DIR)/%.o,$(BENCH_SRC))
BENCH_BIN   := $(BENCH_DIR)/bench_prog

# Kept, not intermediate: the objects and skeletons are worth looking at.
.SECONDARY: $(BENCH_SKELS) $(BENCH_SKELS:.skel.h=.bpf.o)

$(BENCH_DIR)/%.bpf.o: tests/bench/%.bpf.c tests/bench/bench.h | $(DEPS_OK)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BENCH_DIR)/%.skel.h: $(BENCH_DIR)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name bench_$* > $@

$(BENCH_DIR)/%.o: tests/bench/%.c $(SKEL) $(BENCH_SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -I$(BENCH_DIR) -Itests/bench -c $< -o $@

# The bench loads xdp-rl's program as `xdp-rl load` does (user/lib/skel.c).
$(BENCH_BIN): $(BENCH_OBJ) $(BUILD)/user/lib/skel.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(SAN_FLAGS) -o $@ $^ $(LDLIBS) -lpthread

-include $(BENCH_OBJ:.o=.d)

bench: $(BIN) $(BENCH_BIN)
	$(Q)scripts/bench.sh $(BUILD)

# ---- make fuzz (tests/fuzz): libFuzzer, with ASan and UBSan ----
# A target per parser of what users write: the config file (fuzz_config),
# the rules file (fuzz_rules), the option parsers (fuzz_options) and the
# list file (fuzz_lists); and of what comes from the network: Redis's
# replies to the fleet agent (fuzz_resp). The
# CLI's models and bottom layer are built again with clang's coverage
# instrumentation and the sanitizers into build/fuzz (every UBSan report
# fatal), and each target runs FUZZ_SECONDS from the seeds committed in
# tests/fuzz/corpus/TARGET, keeping what it finds in build/fuzz/corpus/TARGET
# (so runs build on each other; the committed seeds stay small). A finding
# stops make, its input in build/fuzz/crash-TARGET-*: run the target on it
# to see it again (build/fuzz/fuzz_TARGET FILE). make test runs each for
# FUZZ_TEST_SECONDS.
FUZZ_DIR          := build/fuzz
FUZZ_TARGETS      := config rules options lists resp
FUZZ_SECONDS      ?= 600
FUZZ_TEST_SECONDS ?= 10
FUZZ_CC           ?= $(CLANG)
FUZZ_SAN          := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS       := -g -O1 $(WARN) -Wno-unknown-warning-option -Wno-missing-field-initializers \
                     -std=gnu11 -D_GNU_SOURCE \
                     -DXDP_RL_VERSION='"$(VERSION)"' $(USER_INC) -MMD -MP $(FUZZ_SAN)
FUZZ_LIB_OBJ      := $(patsubst $(BUILD)/user/%,$(FUZZ_DIR)/user/%,$(UNIT_LIB_OBJ))
FUZZ_BINS         := $(patsubst %,$(FUZZ_DIR)/fuzz_%,$(FUZZ_TARGETS))

$(SKEL_USERS:$(BUILD)/%=$(FUZZ_DIR)/%): $(SKEL)

$(FUZZ_DIR)/user/%.o: user/%.c
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/libxdp-rl.a: $(FUZZ_LIB_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_DIR)/libxdp-rl.a
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_DIR)/libxdp-rl.a \
		-o $@ $(LDLIBS)

-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_BINS:=.d)

fuzz-build: $(FUZZ_BINS)

# -close_fd_mask=2: the parsers' warnings go nowhere; libFuzzer and the
# sanitizers still report on the stderr they keep.
fuzz: $(FUZZ_BINS)
	$(Q)for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$t || exit 1; \
		printf '  %-8s %s\n' FUZZ "fuzz_$$t, $(FUZZ_SECONDS)s"; \
		$(FUZZ_DIR)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
			-rss_limit_mb=2048 -close_fd_mask=2 -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_DIR)/crash-$$t- \
			$(FUZZ_DIR)/corpus/$$t tests/fuzz/corpus/$$t \
			>$(FUZZ_DIR)/fuzz_$$t.log 2>&1 || { \
			tail -n 60 $(FUZZ_DIR)/fuzz_$$t.log >&2; \
			echo "make fuzz: fuzz_$$t found a bug: see $(FUZZ_DIR)/fuzz_$$t.log" >&2; \
			exit 1; }; \
		grep -E '^stat::number_of_executed_units|^Done' $(FUZZ_DIR)/fuzz_$$t.log | \
			sed 's/^/           /'; \
	done

# ---- make lint: any finding fails ----
# The tools under either of their Debian names (clang-tools, clang-format).
tool = $(firstword $(foreach t,$(1),$(shell command -v $(t) 2>/dev/null)) $(firstword $(1)))
CLANG_FORMAT ?= $(call tool,clang-format clang-format-14)
SCAN_BUILD   ?= $(call tool,scan-build scan-build-14)
CPPCHECK     ?= cppcheck
SHELLCHECK   ?= shellcheck
SCAN_DIR     := build/scan

lint: lint-format lint-scan lint-cppcheck lint-shell lint-layers

# Every tracked *.c and *.h as .clang-format has it.
lint-format: | $(LINT_OK)
	$(call msg,FORMAT,*.c *.h)
	$(Q)git ls-files -z '*.c' '*.h' | xargs -0 $(CLANG_FORMAT) --dry-run --Werror

# The clang static analyzer over the user-space build (the CLI, the crash
# test's xdp-rl, the unit tests), built anew in build/scan so that every file
# is analysed and the normal build is untouched; reports go to
# build/scan/report. Those in the skeletons bpftool generates there are left
# out: their error path frees through libbpf (bpf_object__destroy_skeleton),
# which the analyzer does not see, and reports a leak (it still prints it as
# it goes, but does not count it).
lint-scan: | $(LINT_OK)
	$(call msg,SCAN,$(SCAN_DIR))
	$(Q)rm -rf $(SCAN_DIR)/user $(SCAN_DIR)/tests $(SCAN_DIR)/report
	$(Q)$(SCAN_BUILD) --status-bugs -o $(SCAN_DIR)/report --exclude $(CURDIR)/$(SCAN_DIR) \
		$(MAKE) --no-print-directory BUILD=$(SCAN_DIR) SANITIZE= \
		$(addprefix $(SCAN_DIR)/,xdp-rl xdp-rl-faults test_user test_prog)

# cppcheck over the user-space C of user/, tests/ and include/ (not the BPF
# programs, *.bpf.c: those are the verifier's). scripts/cppcheck-libbpf.cfg
# gives it libbpf's macros; each false positive left is suppressed in the
# code, beside a comment that says why.
lint-cppcheck: | $(LINT_OK)
	$(call msg,CPPCHECK,user tests include)
	$(Q)$(CPPCHECK) --quiet --error-exitcode=1 --inline-suppr --std=c11 \
		--enable=warning,portability,performance --library=scripts/cppcheck-libbpf.cfg \
		-Iinclude -Iuser -Iuser/lib $$(git ls-files 'user/*.[ch]' 'tests/*.[ch]' 'include/*.h' ':!:*.bpf.c')

lint-shell: | $(LINT_OK)
	$(call msg,SHCHECK,scripts/*.sh tests/kernels/*.sh .ci/run completion/xdp-rl)
	$(Q)$(SHELLCHECK) scripts/*.sh tests/kernels/*.sh .ci/run completion/xdp-rl

# No file of user/ includes command code unless it is a command; the bottom
# layer includes nothing above it.
lint-layers:
	$(call msg,LAYERS,user/)
	$(Q)scripts/check-layers.sh

# ---- make install, make uninstall ----
# Under PREFIX (/usr/local), in DESTDIR (a staging folder, empty for the
# running system); each folder may be set on its own, as debian/rules does
# (the units' folder: systemd looks in /usr/local/lib/systemd/system too).
# The units run $(SBINDIR)/xdp-rl. uninstall removes the files install
# made, and the folders that are xdp-rl's alone.
SBINDIR     ?= $(PREFIX)/sbin
MANDIR      ?= $(PREFIX)/share/man
DOCDIR      ?= $(PREFIX)/share/doc/xdp-rl
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
UNITDIR     ?= $(PREFIX)/lib/systemd/system
UNITS       := xdp-rl@.service xdp-rl-exporter.service xdp-rl-fleet@.service
EXAMPLES    := $(wildcard doc/examples/*)

install: $(BIN)
	install -D -m 0755 $(BIN) $(DESTDIR)$(SBINDIR)/xdp-rl
	install -D -m 0644 doc/xdp-rl.8 $(DESTDIR)$(MANDIR)/man8/xdp-rl.8
	install -D -m 0644 doc/xdp-rl.conf.5 $(DESTDIR)$(MANDIR)/man5/xdp-rl.conf.5
	install -D -m 0644 completion/xdp-rl $(DESTDIR)$(BASHCOMPDIR)/xdp-rl
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR)/examples
	$(foreach u,$(UNITS),sed 's|@SBINDIR@|$(SBINDIR)|g' systemd/$(u).in \
		> '$(DESTDIR)$(UNITDIR)/$(u)' && chmod 0644 '$(DESTDIR)$(UNITDIR)/$(u)' &&) true
	install -m 0644 $(EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/xdp-rl $(DESTDIR)$(MANDIR)/man8/xdp-rl.8 \
		$(DESTDIR)$(MANDIR)/man5/xdp-rl.conf.5 \
		$(DESTDIR)$(BASHCOMPDIR)/xdp-rl $(foreach u,$(UNITS),'$(DESTDIR)$(UNITDIR)/$(u)') \
		$(addprefix $(DESTDIR)$(DOCDIR)/examples/,$(notdir $(EXAMPLES)))
	rmdir --ignore-fail-on-non-empty $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null || true

# ---- the man pages: doc/xdp-rl.8.scd and doc/xdp-rl.conf.5.scd, and the
# pages made from them ----
# The pages are committed, so that a build needs no scdoc. Their date is the
# latest release's, from debian/changelog, so that making them again gives
# the same pages. make check-man: is each what its source makes?
SCDOC    ?= scdoc
MAN_DATE = $(shell date -d "$$(sed -n 's/^ -- .*>  //p' debian/changelog | head -1)" +%s 2>/dev/null)

MAN_PAGES := xdp-rl.8 xdp-rl.conf.5

$(BUILD)/xdp-rl.8 $(BUILD)/xdp-rl.conf.5: $(BUILD)/%: doc/%.scd debian/changelog
	$(call msg,SCDOC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)command -v $(SCDOC) >/dev/null || { \
		echo "make: scdoc is not installed (sudo make deps, or apt-get install scdoc)" >&2; exit 1; }
	$(Q)SOURCE_DATE_EPOCH=$(MAN_DATE) $(SCDOC) < $< > $@

man: $(addprefix $(BUILD)/,$(MAN_PAGES))
	$(Q)$(foreach p,$(MAN_PAGES),cp $(BUILD)/$(p) doc/$(p) &&) true

check-man: $(addprefix $(BUILD)/,$(MAN_PAGES))
	$(Q)$(foreach p,$(MAN_PAGES),cmp -s $(BUILD)/$(p) doc/$(p) || { \
		echo "make: doc/$(p) is not what doc/$(p).scd makes: run 'make man'" >&2; exit 1; } &&) true

# ---- make deb: a Debian package (debian/), built with debhelper ----
# From a copy of the tree in build/deb (dpkg-buildpackage cleans the tree it
# builds in and writes beside it), so the tree itself is left alone, and
# without this make's variables (the package builds as debian/rules says);
# the package is copied to build/. It needs debhelper and dpkg-dev
# (scripts/deps.sh --check --deb says what is missing).
DEB_DIR  := build/deb
DEB_ARCH  = $(shell dpkg --print-architecture)
DEB_FILE  = build/xdp-rl_$(VERSION)_$(DEB_ARCH).deb

deb:
	$(Q)m=$$(scripts/deps.sh --check --deb) || { \
		echo "make: cannot build the package: Debian packages missing ($${m#missing: })." >&2; \
		echo "make: install them with 'sudo make deps'." >&2; exit 1; }
	$(call msg,DEB,$(DEB_FILE))
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/xdp-rl-$(VERSION)
	$(Q)tar -c --exclude-vcs --exclude-vcs-ignores --exclude=./build . | \
		tar -x -C $(DEB_DIR)/xdp-rl-$(VERSION)
	$(Q)cd $(DEB_DIR)/xdp-rl-$(VERSION) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		dpkg-buildpackage -b -us -uc -jauto $(if $(filter 1,$(V)),,>../build.log 2>&1) || { \
		echo "make: dpkg-buildpackage failed: see $(DEB_DIR)/build.log" >&2; exit 1; }
	$(Q)cp $(DEB_DIR)/$(notdir $(DEB_FILE)) $(DEB_FILE)

clean:
	rm -rf $(BUILD)
