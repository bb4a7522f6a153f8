package bench

import (
	"fmt"
	"time"

	lookahead "github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// w2Reads is where a near-cache row's reads were answered and how long the
// navigation waited for those the near cache could not answer: the stall
// the near cache left, by its cause.
type w2Reads struct {
	Near int // answered in-process
	// Held: the sidecar held the object (a push not applied yet, or never
	// pushed); InFlight: a fetch was bringing it (joined); NotFetched: no
	// fetch had asked for it (a miss).
	Held, InFlight, NotFetched int
	// Wait is the time spent in reads the sidecar answered; Again is the
	// part of it spent in reads that followed another such read, which the
	// prefetch of the object just waited for did not bring along; InNear is
	// the time spent in the reads answered in-process.
	Wait, Again, InNear time.Duration
	last                bool // the previous read went to the sidecar
}

// add records one read: where st says it was answered and how long it took.
func (r *w2Reads) add(st lookahead.Status, took time.Duration) {
	if st.Near {
		r.Near++
		r.InNear += took
		r.last = false
		return
	}
	switch st.Cache {
	case lookaheadv1.CacheStatus_CACHE_STATUS_JOINED:
		r.InFlight++
	case lookaheadv1.CacheStatus_CACHE_STATUS_MISS:
		r.NotFetched++
	default:
		r.Held++
	}
	r.Wait += took
	if r.last {
		r.Again += took
	}
	r.last = true
}

// nearReadsTable renders, per think time and condition, the medians of the
// near-cache row's w2Reads.
func (r *w2Result) nearReadsTable() string {
	var rows [][]string
	for _, t := range r.Cfg.Think {
		for ci, cond := range w2Conditions {
			c := r.cellNear(t, ci, r.nearWorkers(), true)
			if c == nil || len(c.Samples) == 0 {
				continue
			}
			n := func(f func(w2Reads) int) string {
				return fmtCount(c.med(func(s w2Sample) float64 { return float64(f(s.Reads)) }))
			}
			d := func(f func(w2Reads) time.Duration) string {
				return fmtDur(time.Duration(c.med(func(s w2Sample) float64 { return float64(f(s.Reads)) })))
			}
			rows = append(rows, []string{fmtThink(t), cond.Name, fmtDur(c.elapsed()),
				n(func(x w2Reads) int { return x.Near }), n(func(x w2Reads) int { return x.Held }),
				n(func(x w2Reads) int { return x.InFlight }), n(func(x w2Reads) int { return x.NotFetched }),
				d(func(x w2Reads) time.Duration { return x.Wait }), d(func(x w2Reads) time.Duration { return x.Again }),
				d(func(x w2Reads) time.Duration { return x.InNear })})
		}
	}
	return table([]string{"think", "condition", "elapsed", "near hits", "sidecar: held", "sidecar: in flight (joined)",
		"sidecar: not fetched (miss)", "waited on the sidecar", "of which right after another sidecar read", "time in near hits"}, rows)
}

// w2NearReadsNote introduces nearReadsTable.
var w2NearReadsNote = fmt.Sprintf("Where the near-cache row's reads were answered (medians): in-process, or by the sidecar, "+
	"which held the object (its push had not been applied yet), was fetching it, or had not asked for it. "+
	"The wait is the time the navigation spent in the reads the sidecar answered; the second-to-last column is the part of it "+
	"spent in reads that came right after another such read: the fetch just waited for did not bring the next object along; "+
	"the last, the time the near hits took. "+
	"Near cache %d MiB.\n\n", nearBytes>>20)
