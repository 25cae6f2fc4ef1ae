#!/usr/bin/env node
// bpe_reference.js - the reference side of tests/interop/bpe_reference.sh.
//   node bpe_reference.js encode PKG_DIR OUT_DIR FILE...  token ids of each FILE by the
//                                           package's encoder, into OUT_DIR/<n>.ids
//   node bpe_reference.js adversarial SEED N     N bytes of adversarial UTF-8 text on stdout
'use strict';
const fs = require('fs');
const path = require('path');
const [cmd, a, b, ...rest] = process.argv.slice(2);
if (cmd === 'encode') {
	// The package's encode() appends with concat, quadratic in the length of its input, so
	// the text goes to it in chunks of about 8 KB, cut only after a "\n" that has a
	// non-space character on each side. Such a "\n" is a piece of its own, and so is the
	// piece before it and the one after it, for any text: the cut does not change a token.
	const enc = require(path.resolve(a, 'Encoder.js'));
	const ns = c => c !== undefined && !/\s/u.test(c);
	rest.forEach((file, k) => {
		const t = fs.readFileSync(file, 'utf8');
		const out = [];
		let start = 0;
		for (let i = 8192; i < t.length - 1; i++) {
			if (t[i] === '\n' && ns(t[i - 1]) && ns(t[i + 1])) {
				out.push(enc.encode(t.slice(start, i + 1)).join(' '));
				start = i + 1;
				i += 8192;
			}
		}
		if (start < t.length) out.push(enc.encode(t.slice(start)).join(' '));
		fs.writeFileSync(path.join(b, k + '.ids'), out.filter(x => x.length).join(' ') + '\n');
	});
} else if (cmd === 'adversarial') {
	let s = (Number(a) >>> 0) || 1;
	const rnd = n => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s % n; };
	// pieces that stress the pre-tokenizer's alternatives and the merges
	const pieces = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'RE", "''", "'x",
		' ', '  ', '   ', '\n', '\n\n', '\t', '\r\n', ' \n ', '\u00a0', '\u2003', '\u3000',
		'\ufeff', '\u2028', '\u0085', '\u200b', 'a', 'the', ' the', 'The', 'hello', 'ing',
		'0', '12', '345', '٣', 'Ⅻ', '½', '²', '!', '?!', '...', '—', '«»', '#', '@@',
		'é', 'e\u0301', 'ß', 'İ', 'ﬁ', 'Ω', 'ж', 'ح', 'ע', 'ก', '日本語', '한국어',
		'😀', '👩\u200d💻', '🇩🇪', '\u{1d400}', '\u{10ffff}', '\u{e0001}', '\u0000', '\u007f',
		'\u0300', '\u0903', '𝟘', '🄀', 'ǅ', 'ʰ', '〆', '〇', '\ud7ff', '\ue000', '\ufffd'];
	const out = [];
	let bytes = 0;
	while (bytes < Number(b)) {
		const k = rnd(8);
		let p;
		if (k < 6) {
			p = pieces[rnd(pieces.length)];
		} else if (k === 6) { // any scalar value
			let cp = rnd(0x110000);
			if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x20;
			p = String.fromCodePoint(cp);
		} else { // a long run of one piece
			p = pieces[rnd(pieces.length)].repeat(1 + rnd(40));
		}
		out.push(p);
		bytes += Buffer.byteLength(p);
	}
	process.stdout.write(out.join(''));
} else {
	process.stderr.write('usage: bpe_reference.js encode PKG_DIR OUT_DIR FILE... | adversarial SEED N\n');
	process.exit(2);
}
