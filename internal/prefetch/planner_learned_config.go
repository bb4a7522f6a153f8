package prefetch

import "time"

// LearnedConfig tunes the learned planner. Zero values take the defaults.
type LearnedConfig struct {
	// Threshold is the least probability that the application reads an
	// object for it to be fetched speculatively beyond the levels it reads
	// in one round trip (see Ahead; within them the least is lower): there
	// the application will come nearer before the object is due, and the
	// chances will be known better then. At 1/2, speculation fetches, if its
	// estimates are right, at most about two objects for each one read.
	// Default 0.5: on W5 at quick size the hot spot fetched 8 to 14 objects
	// per object read at 0.3 everywhere, 6 to 7 at 0.5.
	Threshold float64
	MaxDepth  int // levels below a read object, however likely; default 8
	// MaxObjects caps the objects one expansion fetches; default 1000.
	MaxObjects int
	// Horizon is how many application requests an offered ref is remembered
	// for: one not read within it counts as not followed; default 512.
	Horizon int
	// Prior is the probability a field's first evidence is weighed
	// against; a ref of a field nothing is known about yet has chance 0,
	// so that speculation starts only once the application has shown what
	// it follows; default 0.25.
	Prior float64
	// Cost is what one object fetched speculatively costs, read or not:
	// origin work, sidecar CPU and bytes, as time. Within the distance the
	// application reads in one round trip (Ahead), a fetch is made when its
	// chance times the round trip it saves is at least twice Cost
	// (paysBack). Default 15µs: the sidecar's 9.3µs and the origin's 4.3µs
	// of CPU per cold object measured when it was set
	// (docs/benchmark-history.md), and bytes (the sidecar's is about 4µs
	// since; at round trips above 2 × Cost ÷ MinChance, 0.24ms, MinChance
	// decides anyway).
	Cost time.Duration
	// CostPerKiB is what each KiB of an object fetched speculatively adds
	// to Cost: the time its bytes take through the origin, the network
	// and the sidecar, which a demand read joining the fetch waits for too.
	// The planner weighs it by the mean size of the objects the
	// application reads. Default 10µs, about 100 MiB/s: the proxied
	// loopback of the W7 benchmark measured 101–432 MiB/s on this machine
	// under load. It matters for large objects only: 128 KiB ones cost
	// 1.3ms each, more than a round trip at 0 and 1 ms, so a branch taken
	// one time in six is not fetched there, nor, with paysBack, at a
	// round trip of 7 ms, where an object of 100 bytes adds 1µs.
	CostPerKiB time.Duration
	// MinChance is the least chance ever fetched, however cheap a fetch is
	// against the round trip: the bound on what wrong estimates can waste,
	// at most 1/MinChance objects per object read; default 1/8.
	MinChance float64
}

func (c *LearnedConfig) setDefaults() {
	if c.Threshold == 0 {
		c.Threshold = 0.5
	}
	if c.MaxDepth == 0 {
		c.MaxDepth = 8
	}
	if c.MaxObjects == 0 {
		c.MaxObjects = 1000
	}
	if c.Horizon == 0 {
		c.Horizon = 512
	}
	if c.Prior == 0 {
		c.Prior = 0.25
	}
	if c.Cost == 0 {
		c.Cost = 15 * time.Microsecond
	}
	if c.CostPerKiB == 0 {
		c.CostPerKiB = 10 * time.Microsecond
	}
	if c.MinChance == 0 {
		c.MinChance = 1.0 / 8
	}
}
