/*
 * atomic_file.h - write a file so that readers see the old or the new version, never a
 * torn one: write "<path>.tmp", fflush, fsync, rename over <path>, fsync the directory.
 * Also mkdir -p. Used for checkpoints, token caches and run files.
 */
#ifndef CS_TRAIN_ATOMIC_FILE_H
#define CS_TRAIN_ATOMIC_FILE_H

#include <stdio.h>

typedef struct af_file {
	FILE *f;
	char path[1100];
	char tmp[1110];
} af_file;

/* Open <path>.tmp for writing. */
int af_open(af_file *a, const char *path);
/* Flush, fsync, close and rename into place; on any failure the tmp file is removed and
 * the old file (if any) is untouched. */
int af_commit(af_file *a);
/* Give up: close and remove the tmp file. */
void af_abort(af_file *a);
/* mkdir -p (0755). */
int af_mkdirs(const char *dir);

#endif /* CS_TRAIN_ATOMIC_FILE_H */
