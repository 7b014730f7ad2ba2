/* The `onepath` command-line tool: one file per subcommand, dispatched from main.c. */
#ifndef OP_CLI_H
#define OP_CLI_H

/* Each subcommand gets argv after its name; returns the process exit code
 * (0 ok, 1 failure of the work, 2 bad usage). Errors go to stderr, results to stdout. */
typedef int (*op_cli_fn)(int argc, char **argv);

typedef struct op_cli_command {
    const char *name;
    op_cli_fn fn;
    const char *summary;
} op_cli_command;

/* Subcommands (one file each). */
int op_cmd_gen(int argc, char **argv);     /* cmd_gen.c */
int op_cmd_bake(int argc, char **argv);    /* cmd_bake.c */
int op_cmd_verify(int argc, char **argv);  /* cmd_verify.c */
int op_cmd_inspect(int argc, char **argv); /* cmd_inspect.c */
int op_cmd_remote(int argc, char **argv);  /* cmd_remote.c */
int op_cmd_put(int argc, char **argv);     /* cmd_put.c */
int op_cmd_fetch(int argc, char **argv);   /* cmd_fetch.c */
int op_cmd_watch(int argc, char **argv);   /* cmd_watch.c */
int op_cmd_path(int argc, char **argv);    /* cmd_path.c */
int op_cmd_render(int argc, char **argv);  /* cmd_render.c */
int op_cmd_export(int argc, char **argv);  /* cmd_export.c */
int op_cmd_volume(int argc, char **argv);  /* cmd_volume.c */
int op_cmd_mesh(int argc, char **argv);    /* cmd_mesh.c */

#endif
