// Command widereplies measures a sidecar's peak memory while an origin
// answers concurrent requests with objects of a million refs each: it serves
// an origintest.Origin holding them, starts the sidecar binary against it,
// makes the requests and prints the sidecar's VmHWM and VmRSS from /proc.
//
//	go run ./internal/origintest/widereplies -sidecar bin/sidecar -clients 4 -refs 1000000 -rpc get
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

func main() {
	sidecar := flag.String("sidecar", "bin/sidecar", "sidecar binary")
	clients := flag.Int("clients", 4, "concurrent requests, each for its own wide object")
	refs := flag.Int("refs", 1_000_000, "refs per object")
	rpc := flag.String("rpc", "get", "get (origin BatchGet) or graph (GetGraph, origin Expand)")
	flag.Parse()
	if err := run(*sidecar, *clients, *refs, *rpc); err != nil {
		fmt.Fprintln(os.Stderr, "widereplies:", err)
		os.Exit(1)
	}
}

func run(bin string, clients, refs int, rpc string) error {
	objs := make([]*graph.Object, clients)
	for i := range objs {
		objs[i] = origintest.Wide("wide"+strconv.Itoa(i), refs)
	}
	o := origintest.New(objs...)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	gs := grpc.NewServer(grpc.MaxSendMsgSize(1 << 30))
	o.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := launch.Start(ctx, bin, []string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
		"--origin", lis.Addr().String(), "--prefetch-mode", "off", "--watch=false"}, os.Stderr)
	if err != nil {
		return err
	}
	defer func() { _ = p.Stop(10 * time.Second) }()
	if err := p.WaitServing(ctx); err != nil {
		return err
	}
	cc, err := grpc.NewClient(p.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	c := lookaheadv1.NewSidecarServiceClient(cc)
	fmt.Printf("sidecar %s, %d concurrent %s of objects with %d refs\n", filepath.Base(bin), clients, rpc, refs)
	fmt.Printf("before: %s\n", mem(p.PID()))
	var wg sync.WaitGroup
	codes := make([]string, clients)
	start := time.Now()
	for i := range clients {
		wg.Go(func() { codes[i] = status.Code(ask(ctx, c, rpc, "wide"+strconv.Itoa(i))).String() })
	}
	wg.Wait()
	fmt.Printf("answers %v after %v\nafter:  %s\n", codes, time.Since(start).Round(time.Millisecond), mem(p.PID()))
	time.Sleep(10 * time.Second)
	fmt.Printf("10s later: %s\n", mem(p.PID()))
	return nil
}

// ask reads id through the sidecar with a Get, or a GetGraph read to its end.
func ask(ctx context.Context, c lookaheadv1.SidecarServiceClient, rpc, id string) error {
	if rpc != "graph" {
		_, err := c.Get(ctx, &lookaheadv1.GetRequest{Id: id})
		return err
	}
	s, err := c.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{id}})
	for err == nil {
		_, err = s.Recv()
	}
	if err == io.EOF {
		return nil
	}
	return err
}

// mem is the process's peak and current resident memory.
func mem(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM") || strings.HasPrefix(l, "VmRSS") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, ", ")
}
