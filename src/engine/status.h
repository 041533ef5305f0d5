/* status.h: the engine's status codes.
 *
 * Every engine call that can fail on input returns an fs_status. The engine never prints and
 * never exits; its clients (the command line, the lessons, the window) turn a status into a
 * message. Programming errors (a NULL where the contract says non-NULL) are assertions instead.
 */
#ifndef FS_STATUS_H
#define FS_STATUS_H

typedef enum {
    FS_OK = 0,
    FS_ERR_NOMEM,      /* an allocation failed */
    FS_ERR_SHAPE,      /* a size is zero, negative, too large, or shapes disagree */
    FS_ERR_TILE,       /* a tile size is zero or negative */
    FS_ERR_MASK,       /* the mask does not fit the problem (bitmask size, window < 1) */
    FS_ERR_TREE,       /* a parent array is not a tree */
    FS_ERR_VALUE,      /* NaN or infinity in an input */
    FS_ERR_ARG,        /* an option is out of range */
    FS_ERR_LIMIT,      /* a trace reached its bound on events (fs_trace.max_events) */
    FS_ERR_RANGE,      /* finite inputs whose scores or sums would overflow float64 */
} fs_status;

/* One short English phrase for a status ("out of memory"). Never NULL. */
const char *fs_status_str(fs_status s);

#endif
