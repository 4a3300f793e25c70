/* ark_streams_rt.h: the multi-stream backends inside a session (runtime/streams.c): session.c opens
 * one instead of launching the loop kernel when the model has a stream program (model.streams), and
 * runs its iterations through it. Plain C. */
#ifndef ARK_STREAMS_RT_H
#define ARK_STREAMS_RT_H

#include "ark.h"

struct ark_srt; /* opaque */

/* Checks the model's stream program against its tables, creates the streams and events and uploads
 * the launches' task indices; arena, tasks, opp and trace ([n_tasks][2] or NULL) are GPU 0's, in
 * device memory. On error *r may be set: ark_srt_close it. */
int ark_srt_open(struct ark_srt **r, const struct ark_model *m, char *arena, const struct ark_task *tasks,
		 const struct ark_opp *opp, unsigned long long *trace);
/* One iteration: issues the program (traced: every task timed into trace), then waits for its end
 * under the watchdog (timeout_ms). empty: issues nothing, only the wait. */
int ark_srt_run(struct ark_srt *r, int traced, int empty, int timeout_ms);
/* Waits for what was issued, then frees everything. NULL is fine. */
void ark_srt_close(struct ark_srt *r);

#endif
