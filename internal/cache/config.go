package cache

import (
	"errors"
	"time"
)

// Defaults for the zero values of Config.
const (
	DefaultMainBytes       = 256 << 20
	DefaultPrefetchBytes   = 64 << 20
	DefaultNegativeTTL     = 5 * time.Second
	DefaultNegativeEntries = 16 << 10
	DefaultFloorEntries    = 64 << 10
	DefaultFloorTTL        = 5 * time.Minute
)

// Config sizes a Cache. Every zero value means its documented default.
type Config struct {
	// MainBytes bounds the main tier, in object bytes (graph.Object.Size);
	// default 256 MiB.
	MainBytes int64
	// PrefetchBytes bounds the prefetch tier, in object bytes; default 64 MiB.
	PrefetchBytes int64
	// TTL is how long an object stays fresh in either tier; 0 = until it is
	// evicted or invalidated.
	TTL time.Duration
	// StaleFor is how long an object is kept after its TTL, answered only as
	// stale (Lookup.Stale) for stale-while-revalidate and stale-if-error; 0 =
	// dropped when its TTL ends. Ignored without a TTL.
	StaleFor time.Duration
	// NegativeTTL is how long a NOT_FOUND answer (AddMissing) is remembered;
	// default 5s, negative disables negative entries.
	NegativeTTL time.Duration
	// NegativeEntries bounds how many absences are remembered at once, oldest
	// forgotten first; default 16384.
	NegativeEntries int
	// FloorEntries bounds how many version floors (InvalidateVersion) are
	// remembered at once, oldest forgotten first; default 65536.
	FloorEntries int
	// FloorTTL is how long a version floor is remembered: longer than any
	// origin fetch can take; default 5m.
	FloorTTL time.Duration
	// Now is the clock for TTLs; default time.Now. Tests inject a fake one.
	Now func() time.Time
}

// Configuration errors, one per rule.
var (
	errMainBytes       = errors.New("cache: MainBytes must not be negative")
	errPrefetchBytes   = errors.New("cache: PrefetchBytes must not be negative")
	errTTL             = errors.New("cache: TTL must not be negative (0 = no TTL)")
	errNegativeEntries = errors.New("cache: NegativeEntries must not be negative")
	errStaleFor        = errors.New("cache: StaleFor must not be negative")
	errFloors          = errors.New("cache: FloorEntries and FloorTTL must not be negative")
)

// validate reports every broken rule, joined.
func (c Config) validate() error {
	var errs []error
	if c.MainBytes < 0 {
		errs = append(errs, errMainBytes)
	}
	if c.PrefetchBytes < 0 {
		errs = append(errs, errPrefetchBytes)
	}
	if c.TTL < 0 {
		errs = append(errs, errTTL)
	}
	if c.NegativeEntries < 0 {
		errs = append(errs, errNegativeEntries)
	}
	if c.StaleFor < 0 {
		errs = append(errs, errStaleFor)
	}
	if c.FloorEntries < 0 || c.FloorTTL < 0 {
		errs = append(errs, errFloors)
	}
	return errors.Join(errs...)
}

// Validate reports every broken rule of c, as New would: for commands that
// check settings before starting.
func (c Config) Validate() error { return c.validate() }

// withDefaults returns c with every zero value replaced by its default.
func (c Config) withDefaults() Config {
	if c.MainBytes == 0 {
		c.MainBytes = DefaultMainBytes
	}
	if c.PrefetchBytes == 0 {
		c.PrefetchBytes = DefaultPrefetchBytes
	}
	if c.NegativeTTL == 0 {
		c.NegativeTTL = DefaultNegativeTTL
	}
	if c.NegativeEntries == 0 {
		c.NegativeEntries = DefaultNegativeEntries
	}
	if c.FloorEntries == 0 {
		c.FloorEntries = DefaultFloorEntries
	}
	if c.FloorTTL == 0 {
		c.FloorTTL = DefaultFloorTTL
	}
	if c.TTL == 0 {
		c.StaleFor = 0
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Ristretto sizing: its TinyLFU wants about ten counters per object the main
// tier can hold. Objects are assumed to be about 1 KiB (a task with a small
// payload); counters cost about 3 bytes each, so they take roughly 3% of
// MainBytes, and that is all the cache allocates ahead of what it stores.
const (
	expectedObjectBytes = 1 << 10
	countersPerObject   = 10
	minCounters         = 1 << 12
	bufferItems         = 64
)

// numCounters is ristretto's NumCounters for a main tier of mainBytes.
func numCounters(mainBytes int64) int64 {
	return max(mainBytes/expectedObjectBytes*countersPerObject, minCounters)
}
