package resilience

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// State is a circuit breaker's state. Its numeric values are what the
// lookahead_origin_breaker_state gauge exports.
type State int

// States.
const (
	StateClosed   State = 0 // calls go through; consecutive failures are counted
	StateOpen     State = 1 // calls are rejected until the cool-down ends
	StateHalfOpen State = 2 // one probe call goes through; its outcome decides
)

func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateOpen:
		return "open"
	case StateHalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Outcome is what a call allowed by the breaker came to.
type Outcome int

// Outcomes.
const (
	// Success closes a half-open circuit and resets the failure count.
	Success Outcome = iota + 1
	// Failure counts towards opening, and reopens a half-open circuit.
	Failure
	// Ignore says nothing about the protected service (the caller gave up,
	// or the request was bad): counts change nowhere, and a half-open
	// circuit lets another probe through.
	Ignore
)

// BreakerConfig tunes a Breaker. Zero values take the documented defaults.
type BreakerConfig struct {
	// Failures is the number of consecutive failed calls that opens the
	// circuit; default 5.
	Failures int
	// Cooldown is how long an open circuit rejects calls before it lets one
	// probe through; default 1s.
	Cooldown time.Duration
	// Clock reads the time; nil = SystemClock.
	Clock Clock
	// OnState, when non-nil, is called with every new state, under the
	// breaker's lock so that calls arrive in order: it must not call the
	// breaker.
	OnState func(State)
}

func (c *BreakerConfig) setDefaults() {
	if c.Failures == 0 {
		c.Failures = 5
	}
	if c.Cooldown == 0 {
		c.Cooldown = time.Second
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
}

func (c BreakerConfig) validate() error {
	var errs []error
	if c.Failures < 1 {
		errs = append(errs, fmt.Errorf("resilience: breaker failures %d: must be at least 1", c.Failures))
	}
	if c.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("resilience: breaker cooldown %v: must not be negative", c.Cooldown))
	}
	return errors.Join(errs...)
}

// ErrOpen is matched by the error Allow returns while the circuit is open.
var ErrOpen = errors.New("resilience: circuit open")

// OpenError is Allow's rejection. It matches ErrOpen and unwraps to the
// failure that opened the circuit, so that a caller can report why.
type OpenError struct {
	Cause error // the last failure recorded before the circuit opened
}

func (e *OpenError) Error() string {
	if e.Cause == nil {
		return ErrOpen.Error()
	}
	return ErrOpen.Error() + ": " + e.Cause.Error()
}

// Is matches ErrOpen.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Unwrap returns the cause.
func (e *OpenError) Unwrap() error { return e.Cause }

// Ticket is an allowed call's admission; hand it back to Record.
type Ticket struct {
	gen   uint64 // the breaker generation the call was admitted in
	probe bool   // the half-open circuit's one probe
}

// Breaker is a circuit breaker: closed, it lets calls through and opens
// after Failures consecutive failures; open, it rejects every call for
// Cooldown; then half-open, it lets exactly one probe through, and closes if
// the probe succeeds or opens again if it fails. It is safe for concurrent
// use. The open-to-half-open step happens on the first Allow after the
// cool-down, not on a timer: a breaker owns no goroutine.
type Breaker struct {
	cfg BreakerConfig

	mu       sync.Mutex // protects the fields below
	state    State
	gen      uint64    // grows at every state change: outcomes of older calls are ignored
	failures int       // consecutive failures while closed
	openedAt time.Time // when the circuit last opened
	probing  bool      // half-open: the probe is out
	cause    error     // the failure that last opened the circuit
}

// NewBreaker returns a closed breaker.
func NewBreaker(cfg BreakerConfig) (*Breaker, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b := &Breaker{cfg: cfg}
	if cfg.OnState != nil {
		cfg.OnState(StateClosed)
	}
	return b, nil
}

// State returns the current state. An open circuit whose cool-down has
// passed still reads open until the next Allow.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Allow admits a call, or rejects it with an *OpenError. Every admitted call
// must be followed by exactly one Record with its ticket.
func (b *Breaker) Allow() (Ticket, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case StateOpen:
		if b.cfg.Clock.Now().Sub(b.openedAt) < b.cfg.Cooldown {
			return Ticket{}, &OpenError{Cause: b.cause}
		}
		b.setState(StateHalfOpen)
		fallthrough
	case StateHalfOpen:
		if b.probing {
			return Ticket{}, &OpenError{Cause: b.cause}
		}
		b.probing = true
		return Ticket{gen: b.gen, probe: true}, nil
	}
	return Ticket{gen: b.gen}, nil
}

// Record reports the outcome of a call Allow admitted; cause is the call's
// error, kept as the reason the circuit opened. Outcomes of calls admitted
// before the last state change are ignored: they describe an origin that
// may no longer be.
func (b *Breaker) Record(t Ticket, o Outcome, cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.gen != b.gen {
		return
	}
	switch b.state {
	case StateClosed:
		switch o {
		case Success:
			b.failures = 0
		case Failure:
			b.failures++
			if b.failures >= b.cfg.Failures {
				b.open(cause)
			}
		}
	case StateHalfOpen:
		if !t.probe {
			return
		}
		b.probing = false
		switch o {
		case Success:
			b.failures = 0
			b.setState(StateClosed)
		case Failure:
			b.open(cause)
		}
	}
}

func (b *Breaker) open(cause error) {
	b.cause = cause
	b.openedAt = b.cfg.Clock.Now()
	b.setState(StateOpen)
}

func (b *Breaker) setState(s State) {
	b.state = s
	b.gen++
	if s != StateHalfOpen {
		b.probing = false
	}
	if b.cfg.OnState != nil {
		b.cfg.OnState(s)
	}
}
