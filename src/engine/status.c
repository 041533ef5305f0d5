/* status.c: the phrases for the engine's status codes. */
#include "status.h"

const char *fs_status_str(fs_status s)
{
    switch (s) {
    case FS_OK:        return "ok";
    case FS_ERR_NOMEM: return "out of memory";
    case FS_ERR_SHAPE: return "bad shape or size";
    case FS_ERR_TILE:  return "tile sizes must be at least 1";
    case FS_ERR_MASK:  return "the mask does not fit the problem";
    case FS_ERR_TREE:  return "the parent array is not a tree";
    case FS_ERR_VALUE: return "NaN or infinity in an input";
    case FS_ERR_ARG:   return "an option is out of range";
    case FS_ERR_LIMIT: return "the trace reached its limit on events";
    case FS_ERR_RANGE: return "a score or a running sum would overflow float64";
    }
    return "unknown status";
}
