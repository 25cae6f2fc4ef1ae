/*
 * repo_file.h - a file of the source tree, read by a test binary wherever the build put it
 * (build/tests/<area>/test_x, or build/san/tests/<area>/test_x with SAN=1).
 */
#ifndef TESTS_REPO_FILE_H
#define TESTS_REPO_FILE_H

/* The whole of `rel` (a path from the top of the tree, e.g. "docs/config.md"), NUL
 * terminated, in a malloc'ed buffer; NULL if it cannot be found or read. */
char *repo_file_read(const char *rel);

#endif
