package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// procCPU is the CPU time process pid has used: the sum, over its threads,
// of the time each has run (/proc/PID/task/TID/schedstat, in nanoseconds;
// /proc/PID/stat counts in clock ticks of 10 ms, too coarse for one query).
// Threads that have exited are not counted; a Go program's rarely exit.
func procCPU(pid int) time.Duration {
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue // the thread exited meanwhile
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				total += time.Duration(ns)
			}
		}
	}
	return total
}

// cpuPerObject formats a median CPU time per object of a row, or "–".
func (r w1RowResult) cpuPerObject(f func(w1Sample) time.Duration) string {
	v := r.med(func(s w1Sample) float64 {
		if s.Objects == 0 {
			return 0
		}
		return float64(f(s)) / float64(s.Objects)
	})
	if v == 0 {
		return "–"
	}
	return fmtDur(time.Duration(v))
}

// expand asks the origin itself for the query's graphs, one Expand of its
// roots as deep as the trees: the origin's own work and the wire, with no
// sidecar, as the lower mark for the sidecar's GetGraph.
func (w *w1) expand(ctx context.Context, p *originPeer, roots []string, s *w1Sample) error {
	start := time.Now()
	stream, err := p.rpc.Expand(ctx, &lookaheadv1.ExpandRequest{Roots: roots, Depth: uint32(w.cfg.Levels - 1),
		MaxObjects: uint32(len(roots) * w.perRoot())})
	if err != nil {
		return err
	}
	p.roundTrips++
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if len(m.GetMissingIds()) > 0 {
			return fmt.Errorf("Expand: missing %v", m.GetMissingIds())
		}
		p.objects += len(m.GetObjects())
		for _, o := range m.GetObjects() {
			s.Objects++
			s.Wire += int64(proto.Size(o))
			p.bytes += graphpb.FromProto(o).Size()
		}
	}
	s.Walk += time.Since(start)
	return nil
}
