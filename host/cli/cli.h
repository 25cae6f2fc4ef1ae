/* cli.h - subcommand entry points of cshost: int cmd_<name>(argc, argv), argv[0] is the
 * subcommand name; return the process exit code (0 ok, 1 failure, 2 usage error). */
#ifndef CS_CLI_H
#define CS_CLI_H

#define CSHOST_VERSION "0.1.0"

int cmd_train(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_spmm(int argc, char **argv);
int cmd_board(int argc, char **argv);
int cmd_sparsity(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_asm(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_plot(int argc, char **argv);

#endif /* CS_CLI_H */
