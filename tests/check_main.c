/* check_main.c: the one test runner. It runs every suite found in tests/check_*.c (the Makefile
 * lists them in suites.h) and exits non-zero on any failure. CK_FORK=no helps a debugger. */
#include <check.h>
#include <stdlib.h>

#define X(name) Suite *name(void);
#include "suites.h"
#undef X

int main(void)
{
    SRunner *sr = srunner_create(NULL);
#define X(name) srunner_add_suite(sr, name());
#include "suites.h"
#undef X
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
