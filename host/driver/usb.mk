# host/driver/usb.mk: the usb backend's emulated-board test (tests/usb/umock_usb.c).
# It runs under umockdev-wrapper (LD_PRELOAD of libumockdev-preload), which gives libusb an
# emulated FT2232H board whose host port is the word-level device model
# (verif/models/mesh_model.c, in the library), so kernels run end to end over the real usb
# backend; run without the wrapper it exits 77 (skipped).
UMOCK_USB := $(BUILD)/tests/usb/umock_usb
UMOCK_CFLAGS = $(shell pkg-config --cflags umockdev-1.0 2>/dev/null)
UMOCK_LIBS = $(shell pkg-config --libs umockdev-1.0 2>/dev/null)

$(BUILD)/obj/tests/usb/umock_usb.o: tests/usb/umock_usb.c | deps
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(UMOCK_CFLAGS) $(CFLAGS) -c $< -o $@

$(UMOCK_USB): $(BUILD)/obj/tests/usb/umock_usb.o $(BUILD)/obj/host/cli/cmd_board.o \
		$(BUILD)/obj/host/cli/cmd_spmm.o $(BUILD)/obj/host/cli/cmd_train.o \
		$(BUILD)/obj/host/cli/cli_num.o $(TEST_SUPPORT_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $^ $(UMOCK_LIBS) $(LDLIBS)

TEST_DEPS += $(UMOCK_USB)
ifeq ($(SAN),1)
# umockdev's preload library must come before everything in the process, ASan's runtime
# insists on coming first: the two cannot share a process. The script says so and skips.
TEST_ENTRIES += tests/usb/umock_usb_san_skip.sh
else
TEST_ENTRIES += /usr/bin/umockdev-wrapper@$(UMOCK_USB)
endif
