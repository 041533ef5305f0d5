/* cuda_backend.h: what the rest of flashstep sees of the optional CUDA path.
 *
 * Without CUDA (the default build), these functions exist and say so: fs_cuda_available
 * returns false with the reason, and every run returns FS_ERR_ARG with that reason. The
 * command line turns that into a clear message and a non-zero exit.
 */
#ifndef FS_CUDA_BACKEND_H
#define FS_CUDA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/run.h"

/* true when the program was built with CUDA and a device and driver answer; otherwise false
 * and why (e.g. "built without CUDA: rebuild with make CUDA=1", "no CUDA device found"). */
bool fs_cuda_available(char *why, size_t n);

/* Run a FS_ALGO_TILED (or FS_ALGO_QUERY) problem of lesson size on the GPU in float32 and
 * record, for each visited tile, each row's (m, l, alpha) in the engine's event form (TILE,
 * SKIP, ROW and OUT events, in the engine's loop order), so the trace can be compared with the
 * engine's event by event. res receives the output as fs_run_exec would give it. */
fs_status fs_cuda_trace(const fs_run *r, fs_result *res, fs_trace *tr, char *why, size_t n);

#endif
