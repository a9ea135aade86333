#!/usr/bin/env python3
"""A case-insensitive view of a directory, as FUSE: `ci_fuse.py BACKING MOUNTPOINT`.

For tests/path_reach.rs: macOS's default APFS and Windows drives under WSL compare names
case-insensitively, and this machine's kernel may offer no such file system (vfat, ext4
casefold need kernel support CI lacks). Each name is looked up in its directory ignoring
case; a new name is created as written. Runs in the foreground until unmounted. Needs
python3-fusepy (Debian; .ci/run installs it) and /dev/fuse.
"""
import errno
import os
import sys

try:
    from fusepy import FUSE, FuseOSError, Operations
except ImportError:  # the PyPI name
    from fuse import FUSE, FuseOSError, Operations


class CaseInsensitive(Operations):
    def __init__(self, backing):
        self.backing = os.path.realpath(backing)

    def real(self, path):
        """The backing path of `path`, each existing component found ignoring case."""
        out = self.backing
        for name in [c for c in path.split("/") if c]:
            exact = os.path.join(out, name)
            if os.path.lexists(exact) or not os.path.isdir(out):
                out = exact
                continue
            folded = name.casefold()
            match = next((n for n in os.listdir(out) if n.casefold() == folded), name)
            out = os.path.join(out, match)
        return out

    def access(self, path, mode):
        if not os.access(self.real(path), mode, follow_symlinks=False):
            raise FuseOSError(errno.EACCES)

    def getattr(self, path, fh=None):
        st = os.lstat(self.real(path)) if fh is None else os.fstat(fh)
        keys = ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size",
                "st_atime", "st_mtime", "st_ctime")
        return {k: getattr(st, k) for k in keys}

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self.real(path))

    def readlink(self, path):
        return os.readlink(self.real(path))

    def mkdir(self, path, mode):
        os.mkdir(self.real(path), mode)

    def rmdir(self, path):
        os.rmdir(self.real(path))

    def unlink(self, path):
        os.unlink(self.real(path))

    def symlink(self, target, source):
        os.symlink(source, self.real(target))

    def rename(self, old, new):
        os.rename(self.real(old), self.real(new))

    def link(self, target, source):
        os.link(self.real(source), self.real(target))

    def chmod(self, path, mode):
        os.chmod(self.real(path), mode, follow_symlinks=False)

    def chown(self, path, uid, gid):
        os.chown(self.real(path), uid, gid, follow_symlinks=False)

    def utimens(self, path, times=None):
        os.utime(self.real(path), times, follow_symlinks=False)

    def truncate(self, path, length, fh=None):
        if fh is None:
            os.truncate(self.real(path), length)
        else:
            os.ftruncate(fh, length)

    def statfs(self, path):
        st = os.statvfs(self.real(path))
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree",
                "f_files", "f_flag", "f_frsize", "f_namemax")
        return {k: getattr(st, k) for k in keys}

    def open(self, path, flags):
        return os.open(self.real(path), flags)

    def create(self, path, mode, fi=None):
        return os.open(self.real(path), os.O_RDWR | os.O_CREAT, mode)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        return os.pwrite(fh, data, offset)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        os.close(fh)

    def fsync(self, path, datasync, fh):
        os.fsync(fh)

    def fsyncdir(self, path, datasync, fh):
        return 0


if __name__ == "__main__":
    FUSE(CaseInsensitive(sys.argv[1]), sys.argv[2], foreground=True, nothreads=True,
         allow_other=False, default_permissions=False)
