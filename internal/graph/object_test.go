package graph_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

func TestObjectSize(t *testing.T) {
	cases := []struct {
		name string
		o    *graph.Object
		want int64
	}{
		{name: "empty object is its overhead", o: &graph.Object{}, want: 96},
		{name: "id, type and payload bytes", o: &graph.Object{ID: "abc", Type: "Task", Payload: make([]byte, 10)}, want: 96 + 3 + 4 + 10},
		{name: "version costs nothing extra", o: &graph.Object{ID: "abc", Version: 1 << 60}, want: 96 + 3},
		{
			name: "each ref: overhead, field and id",
			o:    &graph.Object{ID: "a", Refs: []graph.Ref{{Field: "next", ID: "b"}, {Field: "", ID: "cc"}}},
			want: 96 + 1 + (32 + 4 + 1) + (32 + 0 + 2),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.o.Size())
			var refBytes int64
			for _, r := range tc.o.Refs {
				refBytes += int64(len(r.Field) + len(r.ID))
			}
			assert.Equal(t, tc.want, graph.SizeOf(len(tc.o.ID)+len(tc.o.Type)+len(tc.o.Payload), len(tc.o.Refs), refBytes), "SizeOf agrees")
		})
	}
}

func TestValidateID(t *testing.T) {
	cases := []struct {
		name string
		id   string
		want error
	}{
		{name: "ordinary", id: "task-0.1"},
		{name: "one byte", id: "x"},
		{name: "exactly the limit", id: strings.Repeat("a", graph.MaxIDBytes)},
		{name: "empty", id: "", want: graph.ErrEmptyID},
		{name: "one byte too long", id: strings.Repeat("a", graph.MaxIDBytes+1), want: graph.ErrIDTooLong},
		{name: "limit counts bytes, not runes", id: strings.Repeat("é", graph.MaxIDBytes/2+1), want: graph.ErrIDTooLong},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := graph.ValidateID(tc.id)
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func TestObjectValidate(t *testing.T) {
	long := strings.Repeat("a", graph.MaxIDBytes+1)
	cases := []struct {
		name      string
		o         *graph.Object
		want      error
		wantRef   *graph.RefError // Index and Field of the offending ref
		wantInMsg string
	}{
		{name: "valid", o: &graph.Object{ID: "a", Refs: []graph.Ref{{Field: "next", ID: "b"}, {Field: "self", ID: "a"}}}},
		{name: "refs to objects that do not exist are valid", o: &graph.Object{ID: "a", Refs: []graph.Ref{{ID: "nowhere"}}}},
		{name: "nil", o: nil, want: graph.ErrNilObject},
		{name: "empty id", o: &graph.Object{}, want: graph.ErrEmptyID},
		{name: "long id", o: &graph.Object{ID: long}, want: graph.ErrIDTooLong},
		{
			name:      "empty ref id",
			o:         &graph.Object{ID: "a", Refs: []graph.Ref{{Field: "next", ID: "b"}, {Field: "owner", ID: ""}}},
			want:      graph.ErrEmptyID,
			wantRef:   &graph.RefError{Index: 1, Field: "owner"},
			wantInMsg: "ref 1 (owner): graph: empty id",
		},
		{
			name:    "long ref id",
			o:       &graph.Object{ID: "a", Refs: []graph.Ref{{Field: "next", ID: long}}},
			want:    graph.ErrIDTooLong,
			wantRef: &graph.RefError{Index: 0, Field: "next"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tc.want)
			var re *graph.RefError
			if tc.wantRef == nil {
				assert.False(t, errors.As(err, &re), "not a ref error")
				return
			}
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tc.wantRef.Index, re.Index)
			assert.Equal(t, tc.wantRef.Field, re.Field)
			if tc.wantInMsg != "" {
				assert.Equal(t, tc.wantInMsg, err.Error())
			}
		})
	}
}
