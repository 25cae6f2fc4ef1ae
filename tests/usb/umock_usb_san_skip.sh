#!/bin/sh
# make test SAN=1: the umockdev-emulated board test cannot run under AddressSanitizer.
# umockdev works by LD_PRELOADing libumockdev-preload.so, and ASan's runtime must be the
# first library in the process ("ASan runtime does not come first in initial library
# list"); the two exclude each other. The test runs in the normal `make test`.
echo "umock_usb: SKIP under SAN=1: umockdev's LD_PRELOAD and ASan's runtime cannot share a process; run 'make test' for the emulated-board test"
exit 77
