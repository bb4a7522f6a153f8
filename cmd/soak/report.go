package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc/codes"
)

func (r *Report) merge(results []clientResult) {
	lat := map[string][]time.Duration{}
	for _, res := range results {
		for op, ds := range res.latency {
			lat[op] = append(lat[op], ds...)
		}
		for op, byCode := range res.codes {
			s := r.Ops[op]
			if s == nil {
				s = &OpStats{Codes: map[codes.Code]int{}}
				r.Ops[op] = s
			}
			for c, n := range byCode {
				s.Codes[c] += n
				s.Requests += n
				if c != codes.OK {
					r.Failed += n
				}
			}
		}
		for _, f := range res.failures {
			if len(r.Unexpected) < 10 {
				r.Unexpected = append(r.Unexpected, f)
			}
		}
	}
	for op, ds := range lat {
		slices.Sort(ds)
		r.Ops[op].P50 = ds[len(ds)/2]
		r.Ops[op].P99 = ds[min(len(ds)-1, len(ds)*99/100)]
	}
}

// Requests is the number of requests made.
func (r *Report) Requests() int {
	n := 0
	for _, s := range r.Ops {
		n += s.Requests
	}
	return n
}

// Problems lists why the run failed: failed requests, or more than
// maxGrowth goroutines gained by the sidecar.
func (r *Report) Problems(maxGrowth int) []string {
	var out []string
	if r.Failed > 0 {
		out = append(out, fmt.Sprintf("%d requests failed, e.g. %v", r.Failed, r.Unexpected))
	}
	if g := r.End.Goroutines - r.Start.Goroutines; g > float64(maxGrowth) {
		out = append(out, fmt.Sprintf("sidecar goroutines grew by %v (from %v to %v), more than %d", g, r.Start.Goroutines, r.End.Goroutines, maxGrowth))
	}
	return out
}

// Print writes the report as a table.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "soak: %d clients for %v, %d requests (%.0f/s), %d failed\n",
		r.Clients, r.Elapsed.Round(time.Millisecond), r.Requests(), float64(r.Requests())/r.Elapsed.Seconds(), r.Failed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "op\trequests\tp50\tp99\tcodes")
	ops := make([]string, 0, len(r.Ops))
	for op := range r.Ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		s := r.Ops[op]
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%s\n", op, s.Requests, s.P50.Round(time.Microsecond), s.P99.Round(time.Microsecond), formatCodes(s.Codes))
	}
	tw.Flush()
	fmt.Fprintf(w, "sidecar goroutines: start %v, end %v\n", r.Start.Goroutines, r.End.Goroutines)
	fmt.Fprintf(w, "sidecar RSS: start %.1f MiB, end %.1f MiB\n", r.Start.RSS/(1<<20), r.End.RSS/(1<<20))
	fmt.Fprintf(w, "sidecar requests by method and code: %v; origin round trips: %v\n", r.SidecarRequests, r.RoundTrips)
	for _, u := range r.Unexpected {
		fmt.Fprintln(w, "failure:", u)
	}
}

func formatCodes(m map[codes.Code]int) string {
	keys := make([]codes.Code, 0, len(m))
	for c := range m {
		keys = append(keys, c)
	}
	slices.Sort(keys)
	s := ""
	for i, c := range keys {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s=%d", c, m[c])
	}
	return s
}
