/*
 * path_table.h - the one table of paths both routes are tested with: the
 * resolver's unit test (test_asuser_path.c) includes it, and the black-box
 * test of a Start's cwd and the filesystem's paths
 * (tests/integration/test_serve_paths.py) reads it. One PATH_ROW(input,
 * resolved) a line, in C string syntax; in both: $H is the user's home, $W
 * POST /init's defaultWorkdir ($H when none is set), $D a directory of the
 * test's in the home, holding a and b, beside ~$D and \$D; "!" is refused
 * (invalid_argument, 400). The README's "Paths, and a Start's cwd".
 */
PATH_ROW("", "$W")                                   /* none: defaultWorkdir, else the home */
PATH_ROW("~", "$H")
PATH_ROW("~/", "$H")                                 /* cleaned: no trailing '/' */
PATH_ROW("~/$D/a", "$H/$D/a")
PATH_ROW("$D/a", "$H/$D/a")                          /* relative: from the home */
PATH_ROW("./$D//a/./", "$H/$D/a")                    /* doubled '/', "." folded */
PATH_ROW("$D/missing/../b", "$H/$D/b")               /* ".." folded before anything is looked up */
PATH_ROW("~/$D/a/../../$D/b", "$H/$D/b")
PATH_ROW("$D/a/..", "$H/$D")
PATH_ROW("~$D", "!")                                 /* another user's home */
PATH_ROW("~\\$D", "$H/\\$D")                         /* envd takes "~\" as "~/" */
PATH_ROW("$H/$D/a/../b", "$H/$D/a/../b")             /* absolute: as given, byte for byte */
