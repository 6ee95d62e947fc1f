// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* proc.c - what /proc/PID/stat says of a process (see proc.h). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

unsigned long long proc_stat_field(unsigned long long pid, int field)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd, at;

	if (field < 4)
		return 0;
	snprintf(path, sizeof(path), "/proc/%llu/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* "pid (name) state ppid ...": the name may hold anything. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* The ')' ends field 2; each space starts the next. */
	for (at = 2; *p && at < field; p++)
		if (*p == ' ')
			at++;
	if (sscanf(p, "%llu", &v) != 1)
		return 0;
	return v;
}

pid_t proc_parent(pid_t pid)
{
	return (pid_t)proc_stat_field((unsigned long long)pid, PROC_STAT_PPID);
}

unsigned long long proc_start_ticks(unsigned long long pid)
{
	return proc_stat_field(pid, PROC_STAT_STARTTIME);
}
