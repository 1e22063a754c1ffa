/*
 * notify.h - gpuleased's notices to its service manager: sd_notify(3)
 * through libsystemd, when $NOTIFY_SOCKET names a socket (systemd's
 * Type=notify units); without it each call does nothing.
 *
 * The daemon sends READY=1 once it serves (its warm workers started),
 * RELOADING=1 and then READY=1 around a configuration reload (SIGHUP),
 * STOPPING=1 when it starts to shut down, and STATUS= lines a person reads
 * in `systemctl status`.
 */
#ifndef GL_DAEMON_NOTIFY_H
#define GL_DAEMON_NOTIFY_H

/* READY=1 with STATUS=status (NULL: none). */
void gl_notify_ready(const char *status);

/* RELOADING=1 with MONOTONIC_USEC (what Type=notify-reload asks for). */
void gl_notify_reloading(void);

/* STOPPING=1. */
void gl_notify_stopping(void);

/* STATUS=<the printf-formatted text>. */
void gl_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* True when there is a service manager to notify. */
int gl_notify_enabled(void);

#endif /* GL_DAEMON_NOTIFY_H */
