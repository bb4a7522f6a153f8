package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// errNoRedis means redis-server is not installed.
var errNoRedis = errors.New("redis-server not found in PATH")

// redisServer is a redis-server child process on a free loopback port,
// without persistence.
type redisServer struct {
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
	dir  string
}

// startRedis runs redis-server; errNoRedis when it is not installed.
func startRedis(ctx context.Context) (*redisServer, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errNoRedis
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lookahead-bench-redis-")
	if err != nil {
		return nil, err
	}
	r := &redisServer{Addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir, done: make(chan struct{})}
	r.cmd = exec.Command(path, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
		"--protected-mode", "no", "--loglevel", "warning")
	if err := r.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting redis-server: %w", err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.Ping(ctx).Err(); err == nil {
			return r, nil
		} else if time.Now().After(deadline) || ctx.Err() != nil {
			r.stop()
			return nil, fmt.Errorf("redis-server at %s not answering: %w", r.Addr, err)
		}
		select {
		case <-r.done:
			os.RemoveAll(dir)
			return nil, errors.New("redis-server exited at start")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop ends the redis-server this program started.
func (r *redisServer) stop() {
	if r == nil {
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	os.RemoveAll(r.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
