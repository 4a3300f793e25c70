/* error.c: the thread-local last-error message of libarkrt (ark_error, ark_last_error). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ark.h"

#define ARK_ERRMSG_MAX 2048

static _Thread_local char ark_errmsg[ARK_ERRMSG_MAX];

const char *ark_last_error(void)
{
	return ark_errmsg;
}

int ark_error(const char *fmt, ...)
{
	/* Format into a scratch buffer first: the arguments may include ark_last_error() itself. */
	char tmp[ARK_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	memcpy(ark_errmsg, tmp, sizeof tmp);
	return ARK_ERR;
}
