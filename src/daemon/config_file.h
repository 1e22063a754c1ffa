/*
 * config_file.h - gpuleased's configuration file (gpuleased --config FILE):
 * an INI file (libinih) of `key = value` lines in one section, [gpuleased];
 * keys before any section header belong to it. The keys are the command
 * line's long options without their dashes; src/daemon/main.c applies each
 * through the same code as the flag.
 */
#ifndef GL_DAEMON_CONFIG_FILE_H
#define GL_DAEMON_CONFIG_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* Where gpuleased looks when no --config is given (read only if it exists). */
#define GL_CONFIG_DEFAULT_PATH "/etc/gpulease/gpuleased.conf"

/* The file's one section. */
#define GL_CONFIG_SECTION "gpuleased"

/* Applies one key: 0, or -1 with a message in err (without file or line:
 * the parser puts "FILE:LINE: " in front). */
typedef int (*gl_config_apply_fn)(void *user, const char *key, const char *value, char *err,
                                  size_t errlen);

/* Reads path and calls apply for each key, in file order. Stops at the
 * first error: -1 with "FILE:LINE: message" (or "FILE: why" when it cannot
 * be read) in err. 0 when every key applied. */
int gl_config_file_parse(const char *path, gl_config_apply_fn apply, void *user, char *err,
                         size_t errlen);

/* true/yes/on/1 and false/no/off/0 (any case): 0 with *out, or -1. */
int gl_config_parse_bool(const char *s, bool *out);

#endif
