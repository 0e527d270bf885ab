/* aot_cli.h - ahead-of-time outputs of `graphc compile` (tools/aot_cli.c):
 *
 *   graphc compile FILE --arch sm_90[,sm_80...] -o model.gcx [--embed-weights] [--no-ptx]
 *   graphc compile FILE --emit bundle -o model.gcx ...
 *   graphc compile FILE --emit c -o mlp ...        (writes mlp.h and mlp.o)
 */
#ifndef GC_AOT_CLI_H
#define GC_AOT_CLI_H

/* 1 when these arguments of `graphc compile` ask for a bundle or C output
 * (--emit bundle|c, or -o FILE.gcx without --emit). */
int cli_aot_wanted(int argc, char **argv);

/* Run `graphc compile` for a bundle or C output; returns the exit code. */
int cli_cmd_compile_aot(int argc, char **argv, const char *usage_common, const char *usage_compile);

#endif
