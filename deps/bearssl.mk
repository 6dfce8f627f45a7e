# deps/bearssl.mk - BearSSL's sources into one static archive, for one
# variant of the build (the Makefile runs it once per variant).
#
# BearSSL is some 280 small files, one function or table each: they all go
# into the archive and the linker takes only the objects the agent reaches
# (runner/run/tls.c's suites and engines, agent/core/sha256.c). The list of
# sources is known only once deps/fetch.sh has unpacked them, after the
# Makefile was read: this sub-make reads it then.
#
#   make -f deps/bearssl.mk SRC=build/deps/bearssl OUT=build/musl/deps/bearssl \
#        LIB=build/musl/libbearssl.a CC=musl-gcc CFLAGS='-Os ...' [AR=ar]
SRC ?= build/deps/bearssl
AR ?= ar

SRCS := $(sort $(shell find $(SRC)/src -name '*.c'))
ifeq ($(SRCS),)
$(error deps/bearssl.mk: no BearSSL sources under $(SRC)/src (run deps/fetch.sh))
endif
OBJS := $(patsubst $(SRC)/src/%.c,$(OUT)/%.o,$(SRCS))

$(LIB): $(OBJS)
	@rm -f $@
	@echo "$(AR) rcs $@ ($(words $(OBJS)) objects)"
	@$(AR) rcs $@ $(OBJS)

$(OUT)/%.o: $(SRC)/src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(SRC)/inc -I$(SRC)/src -c $< -o $@
