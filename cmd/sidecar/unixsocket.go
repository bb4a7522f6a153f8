package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

// listenUnix listens on the unix socket path with permissions mode. What
// is already at path is removed only when it is a stale socket, one that
// nothing listens on (left by a crash): a regular file, a directory or a
// socket another process serves stops the start with an error instead.
// The socket is created under the process's umask and then set to mode;
// closing the listener removes it.
func listenUnix(path string, mode fs.FileMode) (net.Listener, error) {
	if err := removeStale(path); err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("unix socket %s: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		l.Close()
		return nil, fmt.Errorf("unix socket %s: mode %#o: %w", path, mode, err)
	}
	return l, nil
}

func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unix socket %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("unix socket %s: exists and is not a socket (%s): refusing to remove it", path, fi.Mode().Type())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("unix socket %s: another process is listening on it", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("unix socket %s: cannot tell whether it is stale: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("unix socket %s: removing the stale socket: %w", path, err)
	}
	return nil
}

// fileMode is a flag.Value for permission bits in octal, such as 0660.
type fileMode fs.FileMode

func (m *fileMode) Set(s string) error {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		return fmt.Errorf("%q: want octal permission bits between 0 and 0777, such as 0660", s)
	}
	*m = fileMode(v)
	return nil
}

func (m *fileMode) String() string { return fmt.Sprintf("%#o", fs.FileMode(*m)) }
