package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Shared is the cluster a test binary shares between its tests; nil when the
// binaries are absent outside CI (the tests that need it then skip).
var Shared *Cluster

// Main starts Shared, runs the tests and removes the cluster. Without server
// binaries the tests run with Shared nil and skip, except under CI=true,
// where the run fails: CI must not count a skipped database test as passed.
// after, if not nil, runs once the tests ended and the cluster is gone (for
// goleak); a non-nil error from it fails the run.
func Main(m *testing.M, after func() error) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := Start(ctx)
	cancel()
	switch {
	case errors.Is(err, ErrNoBinaries) && os.Getenv("CI") != "true":
		fmt.Fprintln(os.Stderr, "pgtest: no PostgreSQL server binaries: database tests skip")
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	Shared = c
	code := m.Run()
	if c != nil {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if after != nil {
		if err := after(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	return code
}

var dbSeq atomic.Int64

// NewDB creates a fresh database on Shared for t and drops it when t ends;
// it skips t when Shared is nil.
func NewDB(t testing.TB) string {
	t.Helper()
	return NewDBFrom(t, "")
}

// NewDBFrom is NewDB with the database copied from template (see
// Cluster.CreateDBFrom): a fixture loaded once serves every test.
func NewDBFrom(t testing.TB, template string) string {
	t.Helper()
	if Shared == nil {
		t.Skip("no PostgreSQL server binaries")
	}
	name := fmt.Sprintf("t%d_%s", dbSeq.Add(1), strings.ToLower(sanitize(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url, err := Shared.CreateDBFrom(ctx, name, template)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := Shared.DropDB(ctx, name); err != nil {
			t.Error(err)
		}
	})
	return url
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
