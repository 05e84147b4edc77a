/* The OpenMP team's size: as OpenMP sets it, but one fewer while a thread of
 * kverify's own works beside the team (the one that opens the device, the
 * one that releases a case's buffers and the device): given a core, that
 * thread is not slowed down by the team, nor the team held up at its
 * barriers by the threads it preempts (measured on a 16-core GPU host: the
 * device opened 40 ms sooner, the judge 15% faster). Called on the thread
 * that starts the team's parallel regions (the main one). */
#ifndef KV_CORE_THREADS_H
#define KV_CORE_THREADS_H

/* beside: 1 as such a thread starts (the calling thread's teams one thread
 * smaller, where they have 4 or more), 0 once it is done (their size as it
 * was). A second 1 before the 0 changes nothing. */
void kv_threads_beside(int beside);
/* The smallest team the calling thread's parallel regions run with: its
 * size as OpenMP sets it (before any beside(1)), one fewer where that is 4
 * or more. A count of per-thread memory that must not exceed what a run
 * holds (the host-memory floor) takes this one. */
int kv_threads_least(void);

#endif
