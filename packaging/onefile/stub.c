/*
 * The first bytes of the one desktop-agent file on Linux: start this build's unpacked
 * app at once, or have the Python launcher unpack it first.
 *
 * The file is this program, then the launcher (launcher.py frozen by PyInstaller as a
 * one-file program), then the app's onedir build as an xz tarball, then a trailer:
 *
 *     "DAONEF02", launcher offset, launcher size, tarball offset (each u64, little
 *     endian), the cache folder's name (64 bytes, NUL-padded)
 *
 * The launcher is a whole Python: PyInstaller's bootloader unpacks its libpython and
 * extension modules to a new temporary folder and starts an interpreter, about 0.13 s
 * of CPU and 7 MB read on every launch only to find that the app is already unpacked.
 * This program does that check in C: when <cache>/<name>/desktop-agent exists it
 * replaces itself with it (execv), so a later launch costs what the onedir build
 * costs. Only when it is missing (the first launch of a build) does it copy the
 * launcher out beside the cache folder and run it with DESKTOP_AGENT_ONEFILE naming
 * this file; the launcher unpacks (all or nothing, see launcher.py) and exits, and
 * this program removes the copy and starts the app.
 *
 * Before starting the app it reads ahead, in the background, what the app's start read
 * last time (read_ahead() below): from a cold page cache that start waited on the disk.
 *
 * `desktop-agent --version` is answered here from the folder's name ("<version>-<digest>")
 * without unpacking anything: on a new build it used to unpack the whole app first
 * (20 s on a loaded machine, with nothing shown).
 *
 * The cache folder is found as launcher.py's cache_root() finds it (the two must
 * agree): $DESKTOP_AGENT_BUNDLE_CACHE, else $XDG_CACHE_HOME/desktop-agent/bundles, else
 * ~/.cache/desktop-agent/bundles. Compiled with -DSTUB_PRINT_CACHE_ROOT the program only
 * prints that folder, which tests/e2e/test_onefile_cache_root.py compares with
 * launcher.py's for the same environments. build.spec compiles this file with the
 * system's C compiler and writes the layout (launcher.append_payload); without a
 * compiler, or off Linux, the one file is the launcher itself (trailer "DAONEF01").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAGIC "DAONEF02"
#define NAME_BYTES 64
#define TRAILER_BYTES (8 + 3 * 8 + NAME_BYTES)
#define APP_NAME "desktop-agent"
#define CACHE_ENV "DESKTOP_AGENT_BUNDLE_CACHE"
#define ONEFILE_ENV "DESKTOP_AGENT_ONEFILE"
#define STARTUP_FILES "startup-files"
#define STARTUP_FILES_ENV "DESKTOP_AGENT_STARTUP_FILES"

static void fail(const char *what, const char *detail) {
    fprintf(stderr,
            "desktop-agent: could not unpack the app (%s%s%s).\n"
            "Free some disk space, or set " CACHE_ENV " to a writable folder, and try again.\n",
            what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static uint64_t u64_at(const unsigned char *bytes) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; i--) value = (value << 8) | bytes[i];
    return value;
}

/* Join three strings into a new one (exits when out of memory). */
static char *join(const char *a, const char *b, const char *c) {
    size_t length = strlen(a) + strlen(b) + strlen(c) + 1;
    char *joined = malloc(length);
    if (joined == NULL) fail("out of memory", NULL);
    snprintf(joined, length, "%s%s%s", a, b, c);
    return joined;
}

/* mkdir -p */
static int make_folders(const char *path) {
    char *copy = join(path, "", "");
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(copy, 0755) != 0 && errno != EEXIST) { free(copy); return -1; }
        *p = '/';
    }
    int status = mkdir(copy, 0755) != 0 && errno != EEXIST ? -1 : 0;
    free(copy);
    return status;
}

static char *cache_root(void) {
    const char *value = getenv(CACHE_ENV);
    if (value != NULL && *value) return join(value, "", "");
    value = getenv("XDG_CACHE_HOME");
    if (value != NULL && *value) return join(value, "/desktop-agent/bundles", "");
    const char *home = getenv("HOME");
    if (home == NULL) {
        struct passwd *entry = getpwuid(getuid());
        home = entry != NULL ? entry->pw_dir : "";
    }
    return join(home, "/.cache/desktop-agent/bundles", "");
}

/* Copy the frozen launcher out of this file and run it to unpack the app. */
static void unpack(const char *self, FILE *file, uint64_t offset, uint64_t size,
                   const char *root) {
    if (make_folders(root) != 0) fail(root, strerror(errno));
    char *copy = join(root, "/.unpacking-launcher-XXXXXX", "");
    int out = mkstemp(copy);
    if (out < 0) fail(root, strerror(errno));
    static char block[1 << 16];
    if (fseeko(file, (off_t)offset, SEEK_SET) != 0) fail(self, strerror(errno));
    for (uint64_t left = size; left > 0;) {
        size_t want = left < sizeof block ? (size_t)left : sizeof block;
        size_t got = fread(block, 1, want, file);
        if (got == 0) { unlink(copy); fail(self, "the file is cut short: download it again"); }
        for (size_t done = 0; done < got;) {
            ssize_t wrote = write(out, block + done, got - done);
            if (wrote < 0) { unlink(copy); fail(copy, strerror(errno)); }
            done += (size_t)wrote;
        }
        left -= got;
    }
    if (fchmod(out, 0700) != 0 || close(out) != 0) { unlink(copy); fail(copy, strerror(errno)); }
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) { unlink(copy); fail("fork", strerror(errno)); }
    if (child == 0) {
        setenv(ONEFILE_ENV, self, 1);
        char *arguments[] = {copy, NULL};
        execv(copy, arguments);
        fprintf(stderr, "desktop-agent: cannot run %s: %s\n", copy, strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    unlink(copy);
    free(copy);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)  /* the launcher said why */
        exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/*
 * Ask the kernel to read ahead, in a background process, the parts of files the app's
 * start read last time (desktop_agent/gui/startup_files.py writes the list: lines of
 * "<offset> <length> <path>", length 0 for the whole file), then return at once.
 *
 * From a cold page cache the window's first paint waited on the disk: each library
 * page and .pyc file it touched was one synchronous read, while the machine's other
 * core was idle. posix_fadvise(WILLNEED) queues the reads without waiting for them,
 * but queueing ~90 MB still takes tens of milliseconds, so a grandchild does it (the
 * child exits at once and is reaped here: the app never sees a child it did not
 * start) while this process becomes the app. The grandchild has no stdin, stdout or
 * stderr: a caller reading the app's output to its end does not wait for it.
 */
static void read_ahead(const char *list) {
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) return;  /* no read-ahead: only slower */
    if (child > 0) {
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
        return;
    }
    if (fork() != 0) _exit(0);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0); dup2(null, 1); dup2(null, 2);
        if (null > 2) close(null);
    }
    FILE *lines = fopen(list, "r");
    if (lines == NULL) _exit(0);
    static char line[PATH_MAX + 64];
    char current[PATH_MAX] = "";
    int fd = -1;
    while (fgets(line, sizeof line, lines) != NULL) {
        char *end = NULL;
        unsigned long long offset = strtoull(line, &end, 10);
        if (end == line || *end != ' ') continue;
        char *rest = end + 1;
        unsigned long long length = strtoull(rest, &end, 10);
        if (end == rest || *end != ' ') continue;
        char *path = end + 1;
        path[strcspn(path, "\n")] = '\0';
        if (*path != '/' || strlen(path) >= sizeof current) continue;
        if (strcmp(path, current) != 0) {  /* one open per file, not per range */
            if (fd >= 0) close(fd);
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
            strcpy(current, path);
        }
        if (fd >= 0) posix_fadvise(fd, (off_t)offset, (off_t)length, POSIX_FADV_WILLNEED);
    }
    _exit(0);
}

int main(int argc, char **argv) {
#ifdef STUB_PRINT_CACHE_ROOT
    fputs(cache_root(), stdout);
    return 0;
#endif
    static char self[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (length <= 0) fail("/proc/self/exe", strerror(errno));
    self[length] = '\0';
    FILE *file = fopen(self, "rb");
    if (file == NULL) fail(self, strerror(errno));
    unsigned char trailer[TRAILER_BYTES];
    if (fseeko(file, -(off_t)TRAILER_BYTES, SEEK_END) != 0
            || fread(trailer, 1, TRAILER_BYTES, file) != TRAILER_BYTES
            || memcmp(trailer, MAGIC, 8) != 0) {
        fprintf(stderr, "desktop-agent: %s carries no app: download it again\n", self);
        return 1;
    }
    char name[NAME_BYTES + 1];
    memcpy(name, trailer + 32, NAME_BYTES);
    name[NAME_BYTES] = '\0';
    if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        fail(self, "its trailer is damaged: download it again");

    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        char *dash = strchr(name, '-');
        if (dash != NULL) *dash = '\0';
        printf(APP_NAME " %s\n", name);
        return 0;
    }

    char *root = cache_root();
    char *target = join(root, "/", name);
    target = join(target, "/", APP_NAME);
    if (access(target, X_OK) != 0) {
        unpack(self, file, u64_at(trailer + 8), u64_at(trailer + 16), root);
        if (access(target, X_OK) != 0) fail(target, "missing after unpacking");
    }
    fclose(file);
    /* Only for the window (no arguments): a command (`serve`...) reads other files. */
    char *list = join(join(root, "/", name), "/", STARTUP_FILES);
    unsetenv(STARTUP_FILES_ENV);
    if (argc == 1 && access(list, R_OK) == 0) read_ahead(list);
    else if (argc == 1) setenv(STARTUP_FILES_ENV, list, 1);  /* written once per build */
    argv[0] = target;
    execv(target, argv);
    fail(target, strerror(errno));
    return 1;
}
