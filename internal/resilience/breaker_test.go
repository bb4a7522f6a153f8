package resilience_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/resilience"
	"github.com/lookahead-dev/lookahead/internal/resilience/resiliencetest"
)

// op is one step of a breaker script: admit a call (remembering its ticket
// under name), record the outcome of a named call, or move the clock.
type op struct {
	allow   string // admit a call under this name; "-" = expect a rejection
	record  string // record the outcome of this call
	outcome resilience.Outcome
	advance time.Duration
	want    resilience.State // state after the step
}

var errDown = errors.New("connection refused")

func allow(name string, want resilience.State) op { return op{allow: name, want: want} }
func reject(want resilience.State) op             { return op{allow: "-", want: want} }
func fail(name string, want resilience.State) op {
	return op{record: name, outcome: resilience.Failure, want: want}
}
func succeed(name string, want resilience.State) op {
	return op{record: name, outcome: resilience.Success, want: want}
}
func ignore(name string, want resilience.State) op {
	return op{record: name, outcome: resilience.Ignore, want: want}
}
func advance(d time.Duration, want resilience.State) op { return op{advance: d, want: want} }

const (
	closed   = resilience.StateClosed
	open     = resilience.StateOpen
	halfOpen = resilience.StateHalfOpen
)

func TestBreaker(t *testing.T) {
	cooldown := 10 * time.Second
	tests := []struct {
		name  string
		steps []op
	}{
		{"opens after consecutive failures and rejects", []op{
			allow("a", closed), allow("b", closed), allow("c", closed),
			fail("a", closed), fail("b", closed), fail("c", open),
			reject(open),
		}},
		{"a success resets the count", []op{
			allow("a", closed), fail("a", closed), allow("b", closed), fail("b", closed),
			allow("c", closed), succeed("c", closed),
			allow("d", closed), fail("d", closed), allow("e", closed), fail("e", closed),
			allow("f", closed),
		}},
		{"ignored outcomes do not count", []op{
			allow("a", closed), fail("a", closed), allow("b", closed), fail("b", closed),
			allow("c", closed), ignore("c", closed), allow("d", closed), ignore("d", closed),
		}},
		{"rejects for the whole cool-down, then lets exactly one probe through", []op{
			allow("a", closed), allow("b", closed), allow("c", closed),
			fail("a", closed), fail("b", closed), fail("c", open),
			advance(cooldown-time.Nanosecond, open), reject(open),
			advance(time.Nanosecond, open), allow("probe", halfOpen), reject(halfOpen), reject(halfOpen),
		}},
		{"a successful probe closes", []op{
			allow("a", closed), allow("b", closed), allow("c", closed),
			fail("a", closed), fail("b", closed), fail("c", open),
			advance(cooldown, open), allow("probe", halfOpen), succeed("probe", closed),
			allow("d", closed), allow("e", closed),
		}},
		{"a failed probe reopens for another full cool-down", []op{
			allow("a", closed), allow("b", closed), allow("c", closed),
			fail("a", closed), fail("b", closed), fail("c", open),
			advance(cooldown, open), allow("probe", halfOpen), fail("probe", open),
			advance(cooldown-time.Nanosecond, open), reject(open),
			advance(time.Nanosecond, open), allow("probe2", halfOpen),
		}},
		{"an ignored probe lets another probe through", []op{
			allow("a", closed), allow("b", closed), allow("c", closed),
			fail("a", closed), fail("b", closed), fail("c", open),
			advance(cooldown, open), allow("probe", halfOpen), ignore("probe", halfOpen),
			allow("probe2", halfOpen), reject(halfOpen), succeed("probe2", closed),
		}},
		{"outcomes of calls admitted before a state change are ignored", []op{
			allow("old", closed), allow("a", closed), allow("b", closed), allow("c", closed),
			fail("a", closed), fail("b", closed), fail("c", open),
			succeed("old", open), // a slow call from before the outage
			advance(cooldown, open), allow("probe", halfOpen),
			fail("old", halfOpen), // still ignored: it is not the probe
			allow("-", halfOpen), succeed("probe", closed),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := resiliencetest.NewClock(time.Unix(1000, 0))
			var states []resilience.State
			b, err := resilience.NewBreaker(resilience.BreakerConfig{
				Failures: 3, Cooldown: cooldown, Clock: clock,
				OnState: func(s resilience.State) { states = append(states, s) },
			})
			require.NoError(t, err)
			tickets := map[string]resilience.Ticket{}
			for i, s := range tt.steps {
				switch {
				case s.allow == "-":
					_, err := b.Allow()
					require.ErrorIs(t, err, resilience.ErrOpen, "step %d", i)
					assert.ErrorIs(t, err, errDown, "step %d: the rejection carries the failure that opened the circuit", i)
				case s.allow != "":
					tk, err := b.Allow()
					require.NoError(t, err, "step %d", i)
					tickets[s.allow] = tk
				case s.record != "":
					tk, ok := tickets[s.record]
					require.True(t, ok, "step %d: no call %q", i, s.record)
					b.Record(tk, s.outcome, errDown)
				default:
					clock.Advance(s.advance)
				}
				assert.Equal(t, s.want, b.State(), "step %d", i)
			}
			require.NotEmpty(t, states)
			assert.Equal(t, b.State(), states[len(states)-1], "OnState saw the last change")
		})
	}
}

func TestBreakerOneFailure(t *testing.T) {
	b, err := resilience.NewBreaker(resilience.BreakerConfig{Failures: 1, Clock: resiliencetest.NewClock(time.Unix(0, 0))})
	require.NoError(t, err)
	tk, err := b.Allow()
	require.NoError(t, err)
	b.Record(tk, resilience.Failure, errDown)
	assert.Equal(t, resilience.StateOpen, b.State())
}

func TestBreakerStateSequence(t *testing.T) {
	clock := resiliencetest.NewClock(time.Unix(0, 0))
	var states []resilience.State
	b, err := resilience.NewBreaker(resilience.BreakerConfig{Failures: 1, Cooldown: time.Second, Clock: clock,
		OnState: func(s resilience.State) { states = append(states, s) }})
	require.NoError(t, err)
	tk, _ := b.Allow()
	b.Record(tk, resilience.Failure, errDown)
	clock.Advance(time.Second)
	tk, err = b.Allow()
	require.NoError(t, err)
	b.Record(tk, resilience.Success, nil)
	assert.Equal(t, []resilience.State{closed, open, halfOpen, closed}, states)
	assert.Equal(t, "half-open", halfOpen.String())
}

func TestBreakerConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     resilience.BreakerConfig
		wantErr string
	}{
		{"zero takes defaults", resilience.BreakerConfig{}, ""},
		{"negative failures", resilience.BreakerConfig{Failures: -1}, "breaker failures -1: must be at least 1"},
		{"negative cooldown", resilience.BreakerConfig{Cooldown: -time.Second}, "breaker cooldown -1s: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resilience.NewBreaker(tt.cfg)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestBreakerDefaults(t *testing.T) {
	clock := resiliencetest.NewClock(time.Unix(0, 0))
	b, err := resilience.NewBreaker(resilience.BreakerConfig{Clock: clock})
	require.NoError(t, err)
	for i := 0; i < 4; i++ {
		tk, err := b.Allow()
		require.NoError(t, err)
		b.Record(tk, resilience.Failure, errDown)
	}
	assert.Equal(t, resilience.StateClosed, b.State(), "4 failures: default is 5")
	tk, _ := b.Allow()
	b.Record(tk, resilience.Failure, errDown)
	assert.Equal(t, resilience.StateOpen, b.State())
	clock.Advance(999 * time.Millisecond)
	_, err = b.Allow()
	assert.ErrorIs(t, err, resilience.ErrOpen, "default cool-down is 1s")
	clock.Advance(time.Millisecond)
	_, err = b.Allow()
	assert.NoError(t, err)
}
