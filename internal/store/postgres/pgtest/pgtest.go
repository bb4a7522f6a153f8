// Package pgtest starts a throwaway PostgreSQL cluster for tests and demos:
// initdb into a temporary directory, pg_ctl on a free port, removed on Stop.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoBinaries means no PostgreSQL server binaries (initdb, pg_ctl) were
// found on PATH or under /usr/lib/postgresql/*/bin.
var ErrNoBinaries = errors.New("pgtest: PostgreSQL server binaries not found")

// Cluster is a running throwaway PostgreSQL server. Its superuser is
// "postgres" with trust authentication, on 127.0.0.1 only.
type Cluster struct {
	bin     string // directory of initdb, pg_ctl and postgres
	dir     string // temporary directory: data, socket, log
	port    int
	runAs   string // "postgres" when running as root, else ""
	running bool
}

// BinDir finds the directory holding initdb and pg_ctl.
func BinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // newest major version first (single digits aside)
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

// Start creates a cluster in a new temporary directory and starts it on a
// free port. When running as root the cluster belongs to the postgres user
// (initdb refuses root) and is run through runuser.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: temp dir: %w", err)
	}
	c := &Cluster{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
		if err := chownTo(dir, c.runAs); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	if c.port, err = freePort(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if out, err := c.run(ctx, "initdb", "-D", c.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %w: %s", err, out)
	}
	if err := c.StartServer(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func chownTo(dir, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("pgtest: running as root needs the %s user: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("pgtest: chown %s: %w", dir, err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }

// run runs one of the cluster's binaries, as the postgres user when root.
func (c *Cluster) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// StartServer starts the cluster's server again after StopServer, on the
// same port.
func (c *Cluster) StartServer(ctx context.Context) error {
	opts := strings.Join([]string{
		"-c listen_addresses=127.0.0.1",
		"-c port=" + strconv.Itoa(c.port),
		"-c unix_socket_directories=" + c.dir,
		"-c fsync=off", "-c full_page_writes=off",
		"-c max_connections=200",
	}, " ")
	out, err := c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-l", filepath.Join(c.dir, "server.log"), "-o", opts, "-w", "-t", "60", "start")
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl start: %w: %s%s", err, out, c.tailLog())
	}
	c.running = true
	return nil
}

// StopServer stops the server immediately (in-flight connections are cut)
// and keeps its data.
func (c *Cluster) StopServer(ctx context.Context) error {
	if !c.running {
		return nil
	}
	out, err := c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-m", "immediate", "-w", "stop")
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %w: %s", err, out)
	}
	c.running = false
	return nil
}

// Stop stops the server and removes everything it had. It is idempotent.
func (c *Cluster) Stop() error {
	if c.dir == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := c.StopServer(ctx)
	if rerr := os.RemoveAll(c.dir); rerr != nil && err == nil {
		err = fmt.Errorf("pgtest: removing %s: %w", c.dir, rerr)
	}
	c.dir = ""
	return err
}

func (c *Cluster) tailLog() string {
	b, err := os.ReadFile(filepath.Join(c.dir, "server.log"))
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\nserver log:\n" + string(b)
}

// Port is the server's TCP port on 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// URL is the connection string of database db.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// CreateDB creates database name and returns its connection string.
func (c *Cluster) CreateDB(ctx context.Context, name string) (string, error) {
	return c.CreateDBFrom(ctx, name, "")
}

// CreateDBFrom creates database name as a copy of database template (empty
// = PostgreSQL's template1), which must have no open connections.
func (c *Cluster) CreateDBFrom(ctx context.Context, name, template string) (string, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: connecting: %w", err)
	}
	defer conn.Close(ctx)
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		return "", fmt.Errorf("pgtest: creating database %s: %w", name, err)
	}
	return c.URL(name), nil
}

// DropDB drops database name, cutting its connections.
func (c *Cluster) DropDB(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pgtest: connecting: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgtest: dropping database %s: %w", name, err)
	}
	return nil
}
