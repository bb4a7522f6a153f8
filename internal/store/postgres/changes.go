package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookahead-dev/lookahead/internal/store"
)

// Revision is the revision of the last change seen: read at Open, then
// advanced by the database's notifications.
func (s *Store) Revision() uint64 { return s.rev.Load() }

// Changed returns a channel that is closed when the revision next advances
// or the store closes; see store.Store.Changed for the pattern to use it.
func (s *Store) Changed() <-chan struct{} {
	return s.rev.Changed()
}

// Changes returns up to limit changes with a revision greater than from, in
// revision order; limit <= 0 means all of them. When changes after from
// were compacted away the error wraps store.ErrCompacted.
func (s *Store) Changes(from uint64, limit int) ([]store.Change, error) {
	if s.isClosed() {
		return nil, store.ErrClosed
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var compacted int64
	if err := s.pool.QueryRow(ctx, "SELECT compacted FROM "+s.log+".meta").Scan(&compacted); err != nil {
		return nil, fmt.Errorf("reading changes after %d: %w", from, classify(err))
	}
	if from < uint64(compacted) {
		return nil, fmt.Errorf("reading changes after %d: %w: the change log keeps revisions after %d only", from, store.ErrCompacted, compacted)
	}
	q := "SELECT revision, id, version, deleted FROM " + s.log + ".changes WHERE revision > $1 ORDER BY revision"
	args := []any{int64(from)}
	if limit > 0 {
		q += " LIMIT $2"
		args = append(args, limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading changes after %d: %w", from, classify(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Change, error) {
		var c store.Change
		var rev, ver int64
		err := r.Scan(&rev, &c.ID, &ver, &c.Deleted)
		c.Revision, c.Version = uint64(rev), uint64(ver)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading changes after %d: %w", from, classify(err))
	}
	if n := len(out); n > 0 {
		s.rev.Advance(out[n-1].Revision)
	}
	return out, nil
}

// Compact drops the changes up to revision through; a watcher resuming from
// before it then gets store.ErrCompacted. It returns the compaction mark.
// The same is `SELECT <change_log>.compact(through)` in SQL, e.g. from cron.
func (s *Store) Compact(through uint64) (uint64, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var c int64
	if err := s.pool.QueryRow(ctx, "SELECT "+s.log+".compact($1)", int64(through)).Scan(&c); err != nil {
		return 0, fmt.Errorf("compacting the change log: %w", classify(err))
	}
	return uint64(c), nil
}

func (s *Store) readRevision(ctx context.Context) (uint64, error) {
	var rev int64
	err := s.pool.QueryRow(ctx, "SELECT greatest((SELECT coalesce(max(revision), 0) FROM "+s.log+".changes), (SELECT compacted FROM "+s.log+".meta))").Scan(&rev)
	if err != nil {
		return 0, fmt.Errorf("reading the revision: %w", classify(err))
	}
	return uint64(rev), nil
}

// listen holds one connection in LISTEN on the change log's channel and
// advances the revision on every notification. After the connection breaks
// it reconnects with backoff and rereads the revision, so changes committed
// meanwhile still wake the watchers.
func (s *Store) listen(ctx context.Context) {
	defer close(s.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() { backoff = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		s.cfg.Log.Warn("postgres change listener: reconnecting", "err", err, "backoff", backoff.String())
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, s.cfg.ReconnectBackoff)
	}
}

func (s *Store) listenOnce(ctx context.Context, connected func()) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection that was in LISTEN is not handed back to the pool.
	conn := pc.Hijack()
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return err
	}
	connected()
	for {
		// Read after LISTEN, and after every wake-up: a notification
		// carries no revision, the table has them all.
		rev, err := s.readRevisionOn(ctx, conn)
		if err != nil {
			return err
		}
		s.rev.Advance(rev)
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
	}
}

func (s *Store) readRevisionOn(ctx context.Context, conn *pgx.Conn) (uint64, error) {
	var rev int64
	err := conn.QueryRow(ctx, "SELECT coalesce(max(revision), 0) FROM "+s.log+".changes").Scan(&rev)
	return uint64(rev), err
}
