package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListenUnixReplacesOnlyAStaleSocket(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		wantErr string // "" = listens
	}{
		{name: "nothing there", prepare: func(*testing.T, string) {}},
		{name: "a stale socket from a crash", prepare: func(t *testing.T, path string) {
			l, err := net.Listen("unix", path)
			require.NoError(t, err)
			l.(*net.UnixListener).SetUnlinkOnClose(false) // as a killed process leaves it
			require.NoError(t, l.Close())
		}},
		{name: "a regular file", wantErr: "exists and is not a socket", prepare: func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("precious"), 0o600))
		}},
		{name: "a directory", wantErr: "exists and is not a socket", prepare: func(t *testing.T, path string) {
			require.NoError(t, os.Mkdir(path, 0o700))
		}},
		{name: "a live socket", wantErr: "another process is listening on it", prepare: func(t *testing.T, path string) {
			l, err := net.Listen("unix", path)
			require.NoError(t, err)
			t.Cleanup(func() { l.Close() })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.sock")
			tt.prepare(t, path)
			before, _ := os.Lstat(path)
			l, err := listenUnix(path, 0o660)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, path)
				assert.ErrorContains(t, err, tt.wantErr)
				after, err := os.Lstat(path)
				require.NoError(t, err, "left in place")
				assert.True(t, os.SameFile(before, after), "the very same file")
				return
			}
			require.NoError(t, err)
			defer l.Close()
			c, err := net.Dial("unix", path)
			require.NoError(t, err, "listening")
			c.Close()
		})
	}
}

func TestListenUnixSetsTheMode(t *testing.T) {
	for _, mode := range []os.FileMode{0o660, 0o600, 0o666} {
		path := filepath.Join(t.TempDir(), "s.sock")
		l, err := listenUnix(path, mode)
		require.NoError(t, err)
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, mode, fi.Mode().Perm())
		require.NoError(t, l.Close())
		_, err = os.Lstat(path)
		assert.True(t, os.IsNotExist(err), "closing removes the socket it made")
	}
}

func TestUnixSocketModeFlag(t *testing.T) {
	o, err := parseFlags([]string{"--unix-socket", "/tmp/x.sock"})
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o660), o.unixSocketMode, "default")
	o, err = parseFlags([]string{"--unix-socket", "/tmp/x.sock", "--unix-socket-mode", "0600"})
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), o.unixSocketMode)
	assert.Contains(t, o.cmd.Settings, "unix-socket-mode=0600")
	for _, bad := range []string{"rw", "0778", "01777", "-1"} {
		_, err = parseFlags([]string{"--unix-socket-mode", bad})
		assert.ErrorContains(t, err, "octal permission bits", bad)
	}
}
