/* report.h: what arkgen prints about a compiled model: the front end's summary, the report of a
 * schedule, and one line per policy for --policy all. */
#ifndef REPORT_H
#define REPORT_H

#include <stdio.h>

#include "arkgen.h"

void report_model(const struct graph *g, FILE *f);
void report_schedule(const struct arkgen_result *r, FILE *f);
void report_policies(const struct arkgen_result *r, FILE *f);

#endif
