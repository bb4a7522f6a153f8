package server

import (
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/reqcheck"
)

// FuzzRequestValidation feeds arbitrary ids, id lists, budgets and hints to
// the request validation helpers. Each must return nil or an
// INVALID_ARGUMENT status with a message, never panic, and must not let
// through what breaks a limit.
func FuzzRequestValidation(f *testing.F) {
	f.Add("task-1", "a,b,c", uint32(3), uint32(100), "subtasks", true, true)
	f.Add("", "", uint32(0), uint32(0), "", false, false)
	f.Add(strings.Repeat("i", graph.MaxIDBytes), "x,,y", uint32(16), uint32(100000), "a,,b", true, false)
	f.Add(strings.Repeat("i", graph.MaxIDBytes+1), strings.Repeat("z,", 9), uint32(17), uint32(100001), ",", false, true)
	f.Add("\xff\xfe", "\x00,\xff", uint32(1<<31), uint32(1<<32-1), "\x00", true, true)
	f.Add("ok", strings.Repeat("q", 2000)+",r", uint32(1<<32-1), uint32(1), "next,owner", true, true)

	cfg := Config{MaxIDs: 8} // small, so that fuzzed lists cross it
	cfg.SetDefaults()
	s := &Server{cfg: cfg}

	f.Fuzz(func(t *testing.T, id, idList string, depth, maxObjects uint32, fieldList string, hasDepth, hasMax bool) {
		ids := strings.Split(idList, ",")
		var fields []string
		if fieldList != "" {
			fields = strings.Split(fieldList, ",")
		}

		err := reqcheck.ID("id", id)
		expectInvalidArgument(t, "checkID", err)
		if err == nil && graph.ValidateID(id) != nil {
			t.Fatalf("checkID accepted %q", id)
		}

		err = s.checkIDs("ids", ids)
		expectInvalidArgument(t, "checkIDs", err)
		if err == nil {
			if len(ids) > cfg.MaxIDs {
				t.Fatalf("checkIDs accepted %d ids, limit %d", len(ids), cfg.MaxIDs)
			}
			for _, x := range ids {
				if graph.ValidateID(x) != nil {
					t.Fatalf("checkIDs accepted %q", x)
				}
			}
		}

		err = s.checkBudget(int(depth), int(maxObjects), fields)
		expectInvalidArgument(t, "checkBudget", err)
		if err == nil && (int(depth) > cfg.MaxDepth || int(maxObjects) > cfg.MaxObjects || hasEmpty(fields)) {
			t.Fatalf("checkBudget accepted depth %d, max_objects %d, fields %q", depth, maxObjects, fields)
		}

		h := &lookaheadv1.PrefetchHint{Fields: fields}
		if hasDepth {
			h.Depth = &depth
		}
		if hasMax {
			h.MaxObjects = &maxObjects
		}
		got, err := s.hint(h)
		expectInvalidArgument(t, "hint", err)
		if err == nil {
			if got.Depth != nil && (*got.Depth != int(depth) || *got.Depth > cfg.MaxDepth) {
				t.Fatalf("hint depth %d from %d", *got.Depth, depth)
			}
			if got.MaxObjects != nil && (*got.MaxObjects != int(maxObjects) || *got.MaxObjects > cfg.MaxObjects) {
				t.Fatalf("hint max_objects %d from %d", *got.MaxObjects, maxObjects)
			}
			if (got.Depth != nil) != hasDepth || (got.MaxObjects != nil) != hasMax {
				t.Fatalf("hint presence changed: %+v from %v", got, h)
			}
		}
		if _, err := s.hint(nil); err != nil {
			t.Fatalf("nil hint: %v", err)
		}
	})
}

func expectInvalidArgument(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	st, ok := status.FromError(err)
	switch {
	case !ok:
		t.Fatalf("%s: not a status: %v", what, err)
	case st.Code() != codes.InvalidArgument:
		t.Fatalf("%s: code %s, want INVALID_ARGUMENT: %v", what, st.Code(), err)
	case strings.TrimSpace(st.Message()) == "":
		t.Fatalf("%s: INVALID_ARGUMENT without a reason", what)
	case !utf8.ValidString(st.Message()):
		t.Fatalf("%s: message is not UTF-8: %q", what, st.Message())
	}
}

func hasEmpty(ss []string) bool {
	for _, s := range ss {
		if s == "" {
			return true
		}
	}
	return false
}
