/* glossary.c: every symbol of the course, one name per quantity, and the lesson defining it. */
#include "lesson.h"

static const fs_glossary_entry entries[] = {
    {"m", "m", "the running maximum of a row's scores seen so far", ""},
    {"ℓ", "l", "the running sum of exp(score − m) over the keys seen so far", ""},
    {"α", "alpha", "exp(m_old − m_new): rescales what was summed before the maximum moved", ""},
    {"β", "beta", "exp(m_blk − m_new): rescales the new block's sum and output", ""},
};

int fs_glossary_count(void) { return (int)(sizeof entries / sizeof entries[0]); }

const fs_glossary_entry *fs_glossary_get(int i)
{
    return i >= 0 && i < fs_glossary_count() ? &entries[i] : 0;
}
