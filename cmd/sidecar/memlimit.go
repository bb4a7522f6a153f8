package main

import (
	"os"
	"runtime/debug"

	"github.com/lookahead-dev/lookahead/internal/cache"
)

// memoryLimit is the Go runtime's soft memory limit for a sidecar with
// these cache budgets, message limit and stream budget: twice the tiers'
// budgets (an object's Go memory is about twice the Size the tiers charge:
// W4 measured a live heap of 1.7× the budget) plus four origin messages in
// flight plus twice the stream budget: what replies may hold for slow
// clients, and as much again that walks' Expands may hold ahead of
// their streams (each walk's share of the budget); plus the two
// speculative queues' bytes (--prefetch-queue-bytes each), which keep
// alive objects the tiers may have evicted meanwhile.
// Near it the garbage collector runs more often and returns freed memory
// to the system, so a burst of large replies does not leave the process at
// its peak for good.
func memoryLimit(c cache.Config, maxMessageBytes, streamBytes, queueBytes int64) int64 {
	return 2*(c.MainBytes+c.PrefetchBytes) + 4*maxMessageBytes + 2*streamBytes + 2*queueBytes
}

// setMemoryLimit applies memoryLimit unless the GOMEMLIMIT environment
// variable has set one (the runtime read it at start); it returns the limit
// in force and where it came from.
func setMemoryLimit(c cache.Config, maxMessageBytes, streamBytes, queueBytes int64) (limit int64, source string) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT"
	}
	limit = memoryLimit(c, maxMessageBytes, streamBytes, queueBytes)
	debug.SetMemoryLimit(limit)
	return limit, "cache budgets"
}

// defaultGCPercent is the sidecar's GOGC. The Go default of 100 collects
// whenever the heap doubles, which for a sidecar filling its cache from a
// small heap means a collection every few thousand cold objects; at 400
// it runs a quarter as often (a cold W1 walk: 0.3–0.4 µs less sidecar CPU
// per object of about 5, BENCHMARKS.md, "Sidecar CPU per cold object").
// The memory limit (setMemoryLimit) bounds what the laxer target may
// cost: near it the collector runs as often as it must.
const defaultGCPercent = 400

// setGCPercent applies percent unless the GOGC environment variable has set
// the collector's target (the runtime read it at start); it returns the
// target in force and where it came from.
func setGCPercent(percent int) (int, string) {
	if os.Getenv("GOGC") != "" {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p, "GOGC"
	}
	debug.SetGCPercent(percent)
	return percent, "--gc-percent"
}
