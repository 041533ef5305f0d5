/* cuda_none.c: the CUDA backend of a build without CUDA: it only says it is absent. */
#include <stdio.h>

#include "kernels/cuda/cuda_backend.h"

bool fs_cuda_available(char *why, size_t n)
{
    if (why && n) snprintf(why, n, "built without CUDA: rebuild with 'make CUDA=1' on a machine with nvcc");
    return false;
}

fs_status fs_cuda_trace(const fs_run *r, fs_result *res, fs_trace *tr, char *why, size_t n)
{
    (void)r; (void)tr;
    if (res) *res = (fs_result){0};
    fs_cuda_available(why, n);
    return FS_ERR_ARG;
}

fs_status fs_cuda_trace_emulated(const fs_run *r, fs_result *res, fs_trace *tr, char *why, size_t n)
{
    return fs_cuda_trace(r, res, tr, why, n);
}
