/*
 * The system work of one hook call and nothing else: the floor under our figures on the
 * disk and machine of the run. bench/run.py compiles it the way our binary is built
 * (statically linked, position independent) and times it through the same harness,
 * interleaved with our calls, so both meet the same disk in the same moment.
 *
 *   floor new    DIR NAME LEDGER_BYTES CHECKPOINT_BYTES
 *       a new session's first call: create DIR/NAME, write LEDGER_BYTES in one write,
 *       fdatasync, fsync DIR (the new name), then create and write the checkpoint beside it
 *       (not synced, as ours does not sync it).
 *   floor new-no-dir-fsync DIR NAME LEDGER_BYTES CHECKPOINT_BYTES
 *       the same without the fsync of DIR, as ours does on ext4 and XFS, whose fsync of a new
 *       file already makes its name durable (src/fs/durable.rs, new_name_durable_with_file).
 *   floor append DIR NAME LEDGER_BYTES CHECKPOINT_BYTES
 *       a later call: append LEDGER_BYTES to DIR/NAME, fdatasync, rewrite the checkpoint.
 *
 * Either reads stdin to EOF first and prints "{}" last, as a hook does. No parsing, no policy,
 * no hashing, no lock, no watchdog thread: whatever ours measures above this is its own work.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[1 << 16];

static int fail(const char *what) {
    perror(what);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 6)
        return fprintf(stderr, "usage: floor new|new-no-dir-fsync|append DIR NAME LEDGER_BYTES CHECKPOINT_BYTES\n"), 2;
    int sync_name = strcmp(argv[1], "new") == 0;
    int fresh = sync_name || strcmp(argv[1], "new-no-dir-fsync") == 0;
    size_t ledger_bytes = strtoul(argv[4], NULL, 10), checkpoint_bytes = strtoul(argv[5], NULL, 10);
    if (ledger_bytes > sizeof buf || checkpoint_bytes > sizeof buf)
        return fprintf(stderr, "sizes over %zu bytes\n", sizeof buf), 2;
    while (read(0, buf, sizeof buf) > 0) {
    }
    memset(buf, 'x', sizeof buf);
    int dir = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return fail("open dir");
    int flags = O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC | (fresh ? O_CREAT | O_EXCL : 0);
    int ledger = openat(dir, argv[3], flags, 0600);
    if (ledger < 0)
        return fail("open ledger");
    if (write(ledger, buf, ledger_bytes) != (ssize_t)ledger_bytes)
        return fail("write ledger");
    if (fdatasync(ledger) != 0)
        return fail("fdatasync ledger");
    if (sync_name && fsync(dir) != 0)
        return fail("fsync dir");
    char name[4096];
    snprintf(name, sizeof name, "%s.state", argv[3]);
    int checkpoint = openat(dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (checkpoint < 0)
        return fail("open checkpoint");
    if (pwrite(checkpoint, buf, checkpoint_bytes, 0) != (ssize_t)checkpoint_bytes)
        return fail("write checkpoint");
    if (ftruncate(checkpoint, checkpoint_bytes) != 0)
        return fail("truncate checkpoint");
    close(checkpoint);
    close(ledger);
    close(dir);
    fputs("{}\n", stdout);
    return 0;
}
