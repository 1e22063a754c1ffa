/*
 * log.h - leveled logging to stderr, shared by the daemon and its workers.
 * Lines look like "2026-11-21T22:37:13.123Z gpuleased[1234] INFO message";
 * when stderr is systemd's journal stream ($JOURNAL_STREAM names it), they
 * are "<6>message": the syslog priority, which the journal keeps as the
 * entry's PRIORITY, and no time, program or pid, which it adds itself.
 */
#ifndef GL_COMMON_LOG_H
#define GL_COMMON_LOG_H

#include <stdbool.h>
#include <stdio.h>

enum gl_log_level { GL_LOG_ERROR = 0, GL_LOG_WARN = 1, GL_LOG_INFO = 2, GL_LOG_DEBUG = 3 };

/* Sets the program name printed on each line and the most verbose level
 * printed (default: "gpulease", INFO). Call once at start-up. */
void gl_log_init(const char *program, enum gl_log_level level);

/* Changes the most verbose level printed (a configuration reload).
 * Thread-safe. */
/* Sends the log's lines to f instead of stderr (NULL: stderr again). The
 * worker does so when its stderr captures kernel output (worker/kout.h).
 * f must stay open while anything logs. */
void gl_log_set_stream(FILE *f);

void gl_log_set_level(enum gl_log_level level);

/* True when gl_log_init found stderr to be the journal. */
bool gl_log_to_journal(void);

/* Parses "error", "warn", "info", "debug". Returns the level or -1. */
int gl_log_level_parse(const char *s);

/* Logs one line (a trailing newline is added). Thread-safe. */
void gl_log(enum gl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define GL_ERROR(...) gl_log(GL_LOG_ERROR, __VA_ARGS__)
#define GL_WARN(...) gl_log(GL_LOG_WARN, __VA_ARGS__)
#define GL_INFO(...) gl_log(GL_LOG_INFO, __VA_ARGS__)
#define GL_DEBUG(...) gl_log(GL_LOG_DEBUG, __VA_ARGS__)

#endif
