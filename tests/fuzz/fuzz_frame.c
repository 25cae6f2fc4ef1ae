/*
 * fuzz_frame.c - libFuzzer target: the link-frame decoder (host/driver/frame.c) fed any
 * byte stream, with byte gaps taken from the input so the timeout paths run too. Every
 * frame it delivers must re-encode to bytes that decode to the same frame.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "driver/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_frame(const frm_frame *f)
{
	static uint8_t bytes[FRM_MAX_BYTES];
	int len = frm_encode(bytes, sizeof bytes, f->type, f->seq, f->words, f->n);
	if (len < 0)
		return; /* a type the encoder does not make */
	frm_dec d;
	frm_dec_init(&d, 0, f->seq);
	int got = 0;
	for (int i = 0; i < len; i++)
		got |= frm_dec_byte(&d, bytes[i], 0) == FRM_GOT_FRAME;
	if (!got || d.frame.type != f->type || d.frame.seq != f->seq || d.frame.n != f->n ||
	    memcmp(d.frame.words, f->words, f->n * sizeof f->words[0])) {
		fprintf(stderr, "fuzz_frame: a delivered frame does not survive re-encoding\n");
		abort();
	}
	frm_stat st;
	frm_stat_parse(&st, f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	frm_dec d;
	frm_dec_init(&d, data[0] & 0x1f, data[1]);
	uint64_t now = 0;
	/* even positions: a byte of the stream; odd: the gap before the next one */
	for (size_t i = 2; i + 1 < size; i += 2) {
		now += data[i + 1] & 0x0f;
		if (frm_dec_byte(&d, data[i], now) == FRM_GOT_FRAME)
			check_frame(&d.frame);
		frm_dec_poll(&d, now);
	}
	return 0;
}
