/* atomic_file.c - tmp + fsync + rename writes, and mkdir -p (see atomic_file.h). */
#include "train/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cs_error.h"

int af_open(af_file *a, const char *path)
{
	memset(a, 0, sizeof *a);
	if (strlen(path) >= sizeof a->path)
		return CS_ERR_INVALID;
	snprintf(a->path, sizeof a->path, "%s", path);
	snprintf(a->tmp, sizeof a->tmp, "%s.tmp", path);
	a->f = fopen(a->tmp, "wb");
	return a->f ? CS_OK : CS_ERR_IO;
}

static void fsync_dir(const char *path)
{
	char dir[1100];
	snprintf(dir, sizeof dir, "%s", path);
	int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int af_commit(af_file *a)
{
	int ok = a->f && fflush(a->f) == 0 && !ferror(a->f) && fsync(fileno(a->f)) == 0;
	if (a->f && fclose(a->f) != 0)
		ok = 0;
	a->f = NULL;
	if (!ok || rename(a->tmp, a->path) != 0) {
		unlink(a->tmp);
		return CS_ERR_IO;
	}
	fsync_dir(a->path);
	return CS_OK;
}

void af_abort(af_file *a)
{
	if (a->f)
		fclose(a->f);
	a->f = NULL;
	if (a->tmp[0])
		unlink(a->tmp);
}

int af_mkdirs(const char *dir)
{
	char buf[1100];
	if (strlen(dir) >= sizeof buf)
		return CS_ERR_INVALID;
	snprintf(buf, sizeof buf, "%s", dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return CS_ERR_IO;
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return CS_ERR_IO;
	return CS_OK;
}
