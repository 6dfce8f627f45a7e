# sandbox-agent - build, test, fuzz and bench.
#
#   make               build/sandbox-agent: static (musl), stripped
#   make test          every test: C unit tests (cmocka, ASan+UBSan), the pytest
#                      integration suite against the static binary and against
#                      an ASan+UBSan build, the E2B JS SDK driving `serve`
#                      (skipped, saying why, without node >= 20.18.1), a short
#                      fuzz run of each parser, and the container tests
#                      (podman + runc, Dockerfile's image)
#   make test-sdk      the E2B JS SDK suite only (tests/sdk)
#   make test-container the Dockerfile's image under podman + runc, and the
#                      Kubernetes Pod of tests/container/pod.yaml (podman kube play)
#   make test-sanitize unit + integration tests against the sanitizer build only
#   make fuzz          each libFuzzer target for FUZZ_SECONDS (default 60)
#   make bench         speed and memory against tini, dumb-init, catatonit, ...,
#                      and serve against nginx, sshd and the fork/TCP floors
#
# Dependencies (libev, cJSON, libb64, http-parser, zlib, BearSSL) are Debian source packages
# fetched once into build/deps by deps/fetch.sh and checked against
# deps/SHA256SUMS.
# Missing Debian packages are installed by deps/packages.sh (root).
# The E2B JS SDK (tests/sdk/package-lock.json) is installed with `npm ci` into
# build/sdk by tests/sdk/install.sh, where node >= 20.18.1 and npm exist.

VERSION     := 0.1.0
B           := build
DEPS        := $(B)/deps
PYTHON      := /usr/bin/python3
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 15

BUILD_PKGS  := musl-tools bzip2 xz-utils
TEST_PKGS   := gcc libcmocka-dev python3-pytest python3-pytest-timeout clang libclang-rt-14-dev util-linux libcap2-bin openssl iproute2
BENCH_PKGS  := hyperfine tini dumb-init catatonit inotify-tools valgrind time nginx openssh-server openssh-client strace socat
CONTAINER_PKGS := podman runc debootstrap busybox-static catatonit iptables

# libev is configured here rather than by its configure script: the same
# switches must reach ev.c and every file that includes ev.h. The agent uses
# io, timer, signal, child, prepare and idle watchers at one priority: the
# other kinds and the priorities are left out (2.1 KB).
EV_DEFS := -DEV_STANDALONE=1 -DEV_USE_EPOLL=1 -DEV_USE_POLL=1 -DEV_USE_SELECT=0 \
           -DEV_USE_SIGNALFD=0 -DEV_USE_EVENTFD=1 -DEV_USE_INOTIFY=0 \
           -DEV_USE_MONOTONIC=1 -DEV_USE_REALTIME=0 -DEV_USE_NANOSLEEP=1 \
           -DEV_USE_FLOOR=1 -DEV_USE_IOURING=0 -DEV_USE_LINUXAIO=0 \
           -DEV_USE_TIMERFD=0 -DEV_USE_CLOCK_SYSCALL=0 -DEV_USE_PORT=0 \
           -DEV_USE_KQUEUE=0 -DEV_NO_THREADS=1 \
           -DEV_PERIODIC_ENABLE=0 -DEV_STAT_ENABLE=0 -DEV_CHECK_ENABLE=0 -DEV_FORK_ENABLE=0 \
           -DEV_CLEANUP_ENABLE=0 -DEV_EMBED_ENABLE=0 -DEV_ASYNC_ENABLE=0 -DEV_MINPRI=0 -DEV_MAXPRI=0

INCLUDES := -I. -isystem $(DEPS)/libev -isystem $(DEPS)/cjson -isystem $(DEPS)/libb64/include -isystem $(DEPS)/http-parser -isystem $(DEPS)/zlib \
            -isystem $(DEPS)/bearssl/inc
# zlib computes its CRC tables on first use instead of carrying 8 KB of them.
ZLIB_DEFS := -DDYNAMIC_CRC_TABLE
DEFS     := -D_GNU_SOURCE -DSA_VERSION='"$(VERSION)"' $(EV_DEFS) $(ZLIB_DEFS)
# Every object is rebuilt when DEFS change (EV_DEFS changes the layout of
# libev's watchers: objects of two sets of DEFS must never be linked
# together): $(B)/.defs holds the DEFS of the objects built.
DEFS_STAMP := $(B)/.defs
ifneq ($(file < $(DEFS_STAMP)),$(DEFS))
$(shell mkdir -p $(B))
$(file > $(DEFS_STAMP),$(DEFS))
endif
WARN     := -fno-strict-aliasing -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter -Werror

# Every .c under the three source folders: a new mode folder needs no edit here.
SRC      := $(sort $(shell find agent runner inotify -name '*.c'))
LIB_SRC  := $(filter-out agent/main.c,$(SRC))
# zlib: deflate and inflate only (no gz* file API, no compress/uncompress).
ZLIB_SRC := $(addprefix $(DEPS)/zlib/,adler32.c crc32.c deflate.c inflate.c inffast.c inftrees.c trees.c zutil.c)
DEP_SRC  := $(DEPS)/libev/ev.c $(DEPS)/cjson/cJSON.c $(DEPS)/libb64/src/cencode.c $(DEPS)/libb64/src/cdecode.c \
            $(DEPS)/http-parser/http_parser.c $(ZLIB_SRC)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))

# Variant "musl": the shipped binary.
MUSL_CC     := musl-gcc
# The hot paths for speed, the rest and the dependencies for size (the
# binary's goal is 480 KB with everything, some 45 KB of it BearSSL's: -Os on
# the cold code saves ~20 KB, on the dependencies ~20 KB more). Hot: every
# byte of a serve stream or transfer goes through it (the copies, encoders,
# parsers and queues), and what the serve benchmarks time; cold: set-up,
# options, the process table's bookkeeping, reports, and the CLI modes
# (watch, session, fs), whose cost per event is the kernel's (their bench
# rows stay far ahead at -Os). The hot files' functions and jump targets are
# not padded to 16 bytes (loops still are): 5.1 KB, no change in their
# time (base64 of 4 GiB: 0.306 -> 0.296 user s, mean of 10 in turns).
MUSL_OPT    ?= -O2
MUSL_HOT_OPT ?= $(MUSL_OPT) -falign-functions=1 -falign-jumps=1 -falign-labels=1
MUSL_COLD_OPT ?= -Os
MUSL_DEP_OPT ?= -Os
HOT_SRC := agent/core/b64.c agent/core/buf.c agent/core/ring.c agent/core/relay.c \
            agent/core/outlet.c agent/core/jsonw.c agent/core/utf8.c \
            agent/core/io.c agent/core/jsonbytes.c agent/core/hash.c \
            agent/api/http/conn.c agent/api/http/conn_send.c agent/api/http/outq.c agent/api/http/httpreq.c \
            agent/api/http/server.c agent/api/connect/connect.c agent/api/connect/rpc.c \
            agent/api/process/stream.c agent/api/process/event.c agent/proc/io.c agent/proc/pace.c \
            agent/api/rest/download.c agent/api/rest/sendfile.c agent/api/rest/upload.c agent/api/rest/upload_file.c \
            agent/api/rest/gz.c agent/api/rest/multipart.c agent/api/filesystem/listdir.c \
            agent/api/filesystem/entry.c agent/api/filesystem/watch.c agent/files/read.c \
            agent/files/write.c agent/files/list.c agent/files/copy.c
# (libb64 among the dependencies: only its decoder is used, for input; the
# encoder on serve's hot path is agent/core/b64.c's own.)
# ... and so is deflate, for a GET /files with gzip: deflate.c and trees.c
# at -O2, slide_hash's loop vectorised, deflate 10% faster (callgrind: 1.58
# -> 1.49 G instructions for 16 MiB of text) for 4.9 KB.
$(B)/musl/deps/zlib/deflate.o: MUSL_DEP_OPT := $(MUSL_OPT) -ftree-vectorize -fvect-cost-model=dynamic
$(B)/musl/deps/zlib/trees.o: MUSL_DEP_OPT := $(MUSL_OPT)
# The agent's own code is position-dependent (-fno-pie: 4.7 KB): the binary
# is a static executable at a fixed address, where PIC only costs bytes (the
# dependencies keep theirs: BearSSL's and http-parser's switch tables would
# grow by more than their code shrinks).
# No RELRO segment: musl's static start-up never makes it read-only, so it
# only padded the file to a page.
MUSL_CFLAGS = -std=c11 $(MUSL_CODE_OPT) -fno-pie -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables $(WARN)
MUSL_CODE_OPT = $(if $(filter $(HOT_SRC),$<),$(MUSL_HOT_OPT),$(MUSL_COLD_OPT))
MUSL_LDFLAGS := -static -s -Wl,--gc-sections -Wl,-z,norelro

# Variant "asan": the tests' copy, glibc, AddressSanitizer + UBSan.
ASAN_CC     := gcc
SAN         := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
ASAN_CFLAGS := -std=c11 -O1 -g $(SAN) $(WARN)

# Variant "fuzz": clang + libFuzzer.
FUZZ_CC     := clang
FUZZ_CFLAGS := -std=c11 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer

obj = $(patsubst %.c,$(B)/$(1)/%.o,$(2))
# Each object's header dependencies, written by the compiler as it builds it
# (-MMD); -MP adds a target for every header, so a removed one breaks nothing.
DEPFLAGS := -MMD -MP
depobj = $(patsubst $(DEPS)/%.c,$(B)/$(1)/deps/%.o,$(DEP_SRC))

.PHONY: all test test-sdk test-container test-unit test-integration test-sanitize fuzz fuzz-smoke bench bench-tools clean distclean deps \
        pkgs-build pkgs-test pkgs-bench pkgs-container asan unit-bins fuzz-bins
.DELETE_ON_ERROR:

all: $(B)/sandbox-agent

# ---- Debian packages -------------------------------------------------------
# What each kind of work needs is installed by an explicit target (`make
# pkgs-build`, `pkgs-test`, `pkgs-bench`, `pkgs-container`; deps/packages.sh:
# root, only what is missing, never an upgrade). Nothing else runs apt: each
# stamp below only checks dpkg's records (deps/packages.sh --check) and calls
# its target when a package is missing, saying which. Each set comes after the
# one before it, so apt never runs twice at once under make -j.
PKGS_build     := $(BUILD_PKGS)
PKGS_test      := $(TEST_PKGS)
PKGS_bench     := $(BENCH_PKGS)
PKGS_container := $(CONTAINER_PKGS)
pkgs-build pkgs-test pkgs-bench pkgs-container: pkgs-%:
	deps/packages.sh $(PKGS_$*)
pkgs-test pkgs-bench pkgs-container: pkgs-build

# The lists are here: a changed Makefile checks them again (dpkg only).
$(B)/.pkgs-%: Makefile
	@mkdir -p $(B)
	@deps/packages.sh --check $(PKGS_$*) || { echo "make: running 'make pkgs-$*' for them" >&2; \
	    $(MAKE) --no-print-directory pkgs-$*; }
	@touch $@
$(B)/.pkgs-test: | $(B)/.pkgs-build
$(B)/.pkgs-bench: | $(B)/.pkgs-test
$(B)/.pkgs-container: | $(B)/.pkgs-test

$(DEPS)/.stamp: deps/fetch.sh deps/SHA256SUMS | $(B)/.pkgs-build
	deps/fetch.sh $(DEPS)
	@touch $@
deps: $(DEPS)/.stamp

# Objects reached through the pattern chains are kept, not deleted as
# intermediate files at the end of every run.
.SECONDARY:

# ---- the static binary ----------------------------------------------------
# BearSSL: all of it in one archive per variant (deps/bearssl.mk), from which
# the linker takes only what is reached. Its entropy comes from getrandom(2),
# injected by runner/run/tls.c, not from an open of /dev/urandom.
# The sanitizer builds read words a byte at a time (no unaligned loads for
# UBSan to stop on).
BEARSSL_DEFS := -DBR_USE_URANDOM=0
BEARSSL_SAN_DEFS := $(BEARSSL_DEFS) -DBR_LE_UNALIGNED=0 -DBR_BE_UNALIGNED=0
BEARSSL_CFLAGS_musl = -std=gnu11 $(MUSL_DEP_OPT) -w -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables $(BEARSSL_DEFS)
BEARSSL_CFLAGS_asan = -std=gnu11 -O1 -g -w $(SAN) $(BEARSSL_SAN_DEFS)
BEARSSL_CFLAGS_fuzz = -w $(FUZZ_CFLAGS) -std=gnu11 $(BEARSSL_SAN_DEFS)
BEARSSL_CC_musl = $(MUSL_CC)
BEARSSL_CC_asan = $(ASAN_CC)
BEARSSL_CC_fuzz = $(FUZZ_CC)
$(B)/%/libbearssl.a: $(DEPS)/.stamp deps/bearssl.mk
	@+$(MAKE) --no-print-directory -f deps/bearssl.mk SRC=$(DEPS)/bearssl OUT=$(B)/$*/deps/bearssl LIB=$@ \
	    CC='$(BEARSSL_CC_$*)' CFLAGS='$(BEARSSL_CFLAGS_$*)'
$(B)/musl/libbearssl.a: | $(B)/.pkgs-build
$(B)/asan/libbearssl.a $(B)/fuzz/libbearssl.a: | $(B)/.pkgs-test

$(B)/musl/deps/%.o: $(DEPS)/.stamp $(DEFS_STAMP) | $(B)/.pkgs-build
	@mkdir -p $(dir $@)
	$(MUSL_CC) -std=gnu11 $(MUSL_DEP_OPT) -w -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables $(DEFS) $(INCLUDES) -c $(DEPS)/$*.c -o $@
$(B)/musl/%.o: %.c $(DEPS)/.stamp $(DEFS_STAMP) | $(B)/.pkgs-build
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(MUSL_CFLAGS) $(DEPFLAGS) $(DEFS) $(INCLUDES) -c $< -o $@
$(B)/sandbox-agent: $(call obj,musl,$(SRC)) $(call depobj,musl) $(B)/musl/libbearssl.a
	$(MUSL_CC) $(MUSL_LDFLAGS) -o $@ $^ -lm
	@echo "built $@ ($$(stat -c %s $@) bytes)"

# ---- sanitizer build (tests' copy) ----------------------------------------
$(B)/asan/deps/%.o: $(DEPS)/.stamp $(DEFS_STAMP) | $(B)/.pkgs-test
	@mkdir -p $(dir $@)
	$(ASAN_CC) -std=gnu11 -O1 -g -w $(SAN) $(DEFS) $(INCLUDES) -c $(DEPS)/$*.c -o $@
$(B)/asan/%.o: %.c $(DEPS)/.stamp $(DEFS_STAMP) | $(B)/.pkgs-test
	@mkdir -p $(dir $@)
	$(ASAN_CC) $(ASAN_CFLAGS) $(DEPFLAGS) $(DEFS) $(INCLUDES) -c $< -o $@
$(B)/asan/sandbox-agent: $(call obj,asan,$(SRC)) $(call depobj,asan) $(B)/asan/libbearssl.a
	$(ASAN_CC) $(SAN) -o $@ $^ -lm
asan: $(B)/asan/sandbox-agent

UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/unit/%,$(UNIT_SRC))
$(B)/unit/%: $(B)/asan/tests/unit/%.o $(call obj,asan,$(LIB_SRC)) $(call depobj,asan) $(B)/asan/libbearssl.a
	@mkdir -p $(dir $@)
	$(ASAN_CC) $(SAN) -o $@ $^ -lcmocka -lm
unit-bins: $(UNIT_BINS)

# ---- fuzzing --------------------------------------------------------------
$(B)/fuzz/deps/%.o: $(DEPS)/.stamp $(DEFS_STAMP) | $(B)/.pkgs-test
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -w $(FUZZ_CFLAGS) $(DEFS) $(INCLUDES) -c $(DEPS)/$*.c -o $@
$(B)/fuzz/%.o: %.c $(DEPS)/.stamp $(DEFS_STAMP) | $(B)/.pkgs-test
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(WARN) $(DEPFLAGS) $(DEFS) $(INCLUDES) -c $< -o $@
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(B)/fuzzers/%,$(FUZZ_SRC))
$(B)/fuzzers/%: $(B)/fuzz/tests/fuzz/%.o $(call obj,fuzz,$(LIB_SRC)) $(call depobj,fuzz) $(B)/fuzz/libbearssl.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -o $@ $^ -lm
fuzz-bins: $(FUZZ_BINS)

fuzz: $(FUZZ_BINS)
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BINS)
fuzz-smoke: $(FUZZ_BINS)
	tests/fuzz/run.sh $(FUZZ_SMOKE_SECONDS) $(FUZZ_BINS)

# ---- tests ----------------------------------------------------------------
# The pinned E2B SDK, out of the source tree; re-installed when the lock changes.
# Without a usable node install.sh says why and installs nothing (the suite
# then skips, saying why): no stamp, so a later make tries again.
SDK_DIR := $(B)/sdk
$(SDK_DIR)/.stamp: tests/sdk/package.json tests/sdk/package-lock.json tests/sdk/install.sh
	tests/sdk/install.sh $(SDK_DIR)
	@if [ -d $(SDK_DIR)/node_modules ]; then touch $@; fi

# tests/run.sh runs each suite, keeps going after a failure, and ends with one
# "N passed, M failed" line (", K skipped" when some were); it exits non-zero
# when anything failed.
# The E2B SDK suite drives the static binary only (the ASan build's serve is
# covered by the integration suite): it is the one users run.
test: $(B)/sandbox-agent $(B)/asan/sandbox-agent $(UNIT_BINS) $(FUZZ_BINS) $(SDK_DIR)/.stamp $(B)/.pkgs-container
	PYTHON=$(PYTHON) tests/run.sh --layers --unit $(UNIT_BINS) \
	    --integration $(B)/sandbox-agent --integration $(B)/asan/sandbox-agent \
	    --sdk $(B)/sandbox-agent $(SDK_DIR) \
	    --fuzz $(FUZZ_SMOKE_SECONDS) $(FUZZ_BINS) --container

test-sdk: $(B)/sandbox-agent $(SDK_DIR)/.stamp $(B)/.pkgs-test
	PYTHON=$(PYTHON) tests/run.sh --sdk $(B)/sandbox-agent $(SDK_DIR)

# The image built from the Dockerfile, run by podman + runc (root, network
# for the image build). tests/container/setup.sh makes the base image once.
# The E2B SDK drives the Kubernetes Pod (test_kube.py).
test-container: $(B)/.pkgs-test $(B)/.pkgs-container $(SDK_DIR)/.stamp
	PYTHON=$(PYTHON) tests/run.sh --container

test-sanitize: $(B)/asan/sandbox-agent $(UNIT_BINS)
	PYTHON=$(PYTHON) tests/run.sh --unit $(UNIT_BINS) --integration $(B)/asan/sandbox-agent

test-unit: $(UNIT_BINS)
	PYTHON=$(PYTHON) tests/run.sh --layers --unit $(UNIT_BINS)

test-integration: $(B)/sandbox-agent $(B)/.pkgs-test
	PYTHON=$(PYTHON) tests/run.sh --integration $(B)/sandbox-agent

# ---- benchmarks -----------------------------------------------------------
# Two minimal signal forwarders (tests/bench/fwd.c), the floor of each way
# to wait for a signal, beside the agent in the signal-latency rows.
$(B)/bench/fwd: tests/bench/fwd.c $(B)/musl/deps/libev/ev.o
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(MUSL_CFLAGS) $(DEFS) $(INCLUDES) $(MUSL_LDFLAGS) -o $@ $< $(B)/musl/deps/libev/ev.o -lm

# The serve rows' C client (tests/bench/hclient.c, its wire in hwire.c:
# HTTP/1.1, Connect envelopes, base64) and their anchors (tests/bench/floor.c:
# fork/exec/wait, loopback TCP, a pipe, a fast writer; tests/bench/ipcfloor.c:
# the minimal Start server, the IPC floor): libc only, static, -O2.
BENCH_TOOLS := $(B)/bench/hclient $(B)/bench/floor $(B)/bench/ipcfloor $(B)/bench/freezefloor
BENCH_CFLAGS := -std=c11 -O2 $(WARN) -static
$(B)/bench/hclient: tests/bench/hclient.c tests/bench/hwire.c tests/bench/hwire.h | $(B)/.pkgs-build
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(BENCH_CFLAGS) -o $@ tests/bench/hclient.c tests/bench/hwire.c
$(B)/bench/floor: tests/bench/floor.c | $(B)/.pkgs-build
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(BENCH_CFLAGS) -o $@ $<
$(B)/bench/ipcfloor: tests/bench/ipcfloor.c | $(B)/.pkgs-build
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(BENCH_CFLAGS) -o $@ $<
$(B)/bench/freezefloor: tests/bench/freezefloor.c | $(B)/.pkgs-build
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(BENCH_CFLAGS) -o $@ $<
bench-tools: $(BENCH_TOOLS)

bench: $(B)/sandbox-agent $(B)/bench/fwd $(BENCH_TOOLS) $(B)/.pkgs-bench $(B)/.pkgs-test
	$(PYTHON) tests/bench/bench.py $(B)/sandbox-agent

# The header dependencies of every object built so far.
-include $(shell find $(B)/musl $(B)/asan $(B)/fuzz -name '*.d' 2>/dev/null)

clean:
	rm -rf $(B)/musl $(B)/asan $(B)/fuzz $(B)/unit $(B)/fuzzers $(B)/sandbox-agent
distclean:
	rm -rf $(B)
